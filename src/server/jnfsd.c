/*
 * jnfsd - the jnfs NFS server. Until the RPC layer lands it reports what
 * the build contains.
 */
#include <stdio.h>

int main(void)
{
	printf("jnfsd: the journal and device layers are built; the NFS service is not yet.\n");
	return 0;
}

#include "export/fh.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "base/siphash.h"

void fh_encode(const uint8_t key[16], const struct fh *fh, uint8_t out[FH_SIZE])
{
	memset(out, 0, FH_SIZE);
	out[0] = FH_VERSION;
	uint32_t fsid = htole32(fh->fsid), gen = htole32(fh->gen);
	uint64_t ino = htole64(fh->ino);
	memcpy(out + 4, &fsid, 4);
	memcpy(out + 8, &ino, 8);
	memcpy(out + 16, &gen, 4);
	uint64_t mac = htole64(siphash24(key, out, 24));
	memcpy(out + 24, &mac, 8);
}

int fh_decode(const uint8_t key[16], const void *data, size_t len, struct fh *fh)
{
	const uint8_t *in = data;
	if (len != FH_SIZE || in[0] != FH_VERSION)
		return -EBADMSG;
	uint64_t mac;
	memcpy(&mac, in + 24, 8);
	if (le64toh(mac) != siphash24(key, in, 24))
		return -EBADMSG;
	uint32_t fsid, gen;
	uint64_t ino;
	memcpy(&fsid, in + 4, 4);
	memcpy(&ino, in + 8, 8);
	memcpy(&gen, in + 16, 4);
	fh->fsid = le32toh(fsid);
	fh->ino = le64toh(ino);
	fh->gen = le32toh(gen);
	return 0;
}

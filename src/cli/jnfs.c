/*
 * jnfs - the jnfs administration tool.
 */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: jnfs <command> [args]\n"
		   "commands:\n"
		   "  help        this text\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return argc < 2 ? 2 : 0;
	}
	fprintf(stderr, "jnfs: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

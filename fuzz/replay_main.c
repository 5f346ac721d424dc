/*
 * replay_main.c - run a fuzz target over every file in the directories
 * (or files) given on the command line, without libFuzzer. Fails when a
 * directory is empty, so a lost corpus cannot pass silently.
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	long total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			total++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		long here = 0;
		while (d && (e = readdir(d))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path))
				return 1;
			here++;
		}
		if (d)
			closedir(d);
		if (!here) {
			fprintf(stderr, "%s: empty corpus\n", argv[i]);
			return 1;
		}
		total += here;
	}
	printf("ok replayed %ld inputs\n", total);
	return 0;
}

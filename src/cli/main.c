/*
 * main.c - the `fa4jit` command: dispatch to subcommands (check, compile, info, cache).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fa4jit.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"check", fa4__cli_check, "check a mod file; --eval runs the CPU evaluator"},
    {"compile", fa4__cli_compile, "compile mods for a GPU architecture into the cache (no GPU needed)"},
    {"info", fa4__cli_info, "versions, devices, kernel fingerprint and cache location"},
    {"cache", fa4__cli_cache, "manage cache directories: ls, stats, verify, prune, clear"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: fa4jit <command> [options]   (fa4jit <command> --help for details)\n\n"
               "fa4jit compiles custom attention variants (score_mod / mask_mod) into fast GPU\n"
               "kernels at run time and caches them. Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n  --version  print the version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("fa4jit %s (kernel fingerprint %s)\n", fa4_version_string(), fa4_kernel_fingerprint());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "fa4jit: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

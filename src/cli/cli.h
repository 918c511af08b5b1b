/*
 * cli.h - subcommands of the `fa4jit` command. Each takes argc/argv starting at the subcommand's
 * name (argv[0] == "check"), prints to stdout/stderr, and returns the process exit status:
 * 0 success, 1 a user-level failure (bad mod, failed verify), 2 bad usage or an internal error.
 * Every subcommand answers --help.
 */
#ifndef FA4_CLI_H
#define FA4_CLI_H

#include <stddef.h>

int fa4__cli_check(int argc, char **argv);   /* cmd_check.c:  check FILE.mod [--eval b,h,q,kv[,score]] */
int fa4__cli_compile(int argc, char **argv); /* cmd_compile.c: compile FILE.mod... --arch sm_90a */
int fa4__cli_info(int argc, char **argv);    /* cmd_info.c:   versions, devices, cache location */
int fa4__cli_cache(int argc, char **argv);   /* cmd_cache.c:  cache ls|stats|verify|prune|clear */

/* Read a whole file (at most max bytes) into a malloc'd NUL-terminated buffer. Returns 0, or -1 with
 * a message in err ("cannot open 'x.mod': No such file or directory"). */
int fa4__cli_read_file(const char *path, size_t max, char **buf, size_t *len, char *err,
                       size_t errlen);

/* 1 when stdout is a terminal and NO_COLOR is unset (for colour and progress lines). */
int fa4__cli_isatty(void);

#endif /* FA4_CLI_H */

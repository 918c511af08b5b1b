/*
 * cmd_cache.c - `fa4jit cache ls|stats|verify|prune|clear`: inspect and maintain cache
 * directories (CACHE.md G12). Human output by default, --json for machines. Reading commands open
 * the tiers read-only (they write nothing, not even mtimes); prune and clear open them read-write.
 * `verify --recompile` compiles every entry again from its "spec" blob on a deviceless ctx with
 * the cache off and compares each program's cubin with the entry's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/admin.h"
#include "cache/cache.h"
#include "cache/entry.h"
#include "cli.h"
#include "fa4jit.h"
#include "spec.h"

typedef struct opts {
    const char *cmd;
    const char *dir;
    const char *hmac_key;
    int json, recompile, shared, require_hmac;
    int64_t max_size;
} opts;

static const char usage_text[] =
    "usage: fa4jit cache <command> [--cache-dir DIR] [--json] [options]\n"
    "\n"
    "Inspect and maintain kernel cache directories. Without --cache-dir the tiers come from\n"
    "FA4JIT_CACHE_PATH, FA4JIT_CACHE_DIR or the default ($XDG_CACHE_HOME/fa4jit).\n"
    "\n"
    "commands:\n"
    "  ls                    list the entries: key, size, age, arch, programs, state\n"
    "  stats                 per tier: entries, bytes, limit, temp, lock and quarantined files\n"
    "  verify [--recompile]  check every entry (length, checksum, layout, key, HMAC); with\n"
    "                        --recompile compile each again (no GPU needed) and compare cubins\n"
    "  prune [--max-size N]  evict least recently used entries down to N bytes (K, M, G\n"
    "                        suffixes; default: the configured limit) and remove temp and lock\n"
    "                        files older than an hour\n"
    "  clear                 remove every entry of the writable tiers\n"
    "\n"
    "options:\n"
    "  --cache-dir DIR       use DIR as the only tier\n"
    "  --shared              DIR is a team directory (group-writable roots are accepted)\n"
    "  --hmac-key FILE       team key: check signatures (default FA4JIT_CACHE_HMAC_KEY_FILE)\n"
    "  --require-hmac        unsigned or badly signed entries fail verify\n"
    "  --json                machine-readable output\n"
    "  --help                this text\n"
    "\n"
    "exit status: 0 fine, 1 verify found bad entries, 2 bad usage or an error\n";

/* ------------------------------------------------------------------------------ output helpers */

static void json_str(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\n')
            printf("\\n");
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_cstr(const char *s)
{
    json_str(s, strlen(s));
}

static void human_size(int64_t b, char *out, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void human_age(int64_t s, char *out, size_t len)
{
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(out, len, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(out, len, "%lldm", (long long)(s / 60));
    else if (s < 172800)
        snprintf(out, len, "%lldh", (long long)(s / 3600));
    else
        snprintf(out, len, "%lldd", (long long)(s / 86400));
}

/* The value of "name=" on a line of the key inputs, e.g. arch; "" when absent. */
static void key_field(const char *text, size_t n, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if ((i == 0 || text[i - 1] == '\n') && i + nl + 1 <= n && !strncmp(text + i, name, nl) &&
            text[i + nl] == '=') {
            size_t j = i + nl + 1, k = 0;
            while (j < n && text[j] != '\n' && k + 1 < len)
                out[k++] = text[j++];
            out[k] = '\0';
            return;
        }
    }
}

static int is_program(const char *name)
{
    return strcmp(name, "spec") != 0 && strcmp(name, "meta") != 0;
}

/* ------------------------------------------------------------------------------ opening */

static fa4__cache *open_cache(const opts *o, int writable)
{
    fa4__cache_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.mode = writable ? FA4_CACHE_MODE_RW : FA4_CACHE_MODE_RO;
    if (o->dir) {
        cfg.cache_dir = o->dir;
        cfg.cache_path = ""; /* --cache-dir is the only tier, whatever FA4JIT_CACHE_PATH says */
    }
    cfg.shared = o->shared;
    cfg.hmac_key_file = o->hmac_key;
    cfg.require_hmac = o->require_hmac;
    fa4__cache *c = NULL;
    char err[512];
    if (fa4__cache_open(&cfg, &c, err, sizeof err) != FA4_OK) {
        fprintf(stderr, "fa4jit cache: %s\n", err);
        return NULL;
    }
    /* a tier that is off is worth a word on stderr: "nothing listed" would otherwise mislead */
    for (int i = 0; i < fa4__cache_num_tiers(c); i++) {
        fa4__cache_tier_info ti;
        fa4__cache_tier_info_get(c, i, &ti);
        if (!ti.enabled)
            fprintf(stderr, "fa4jit cache: tier %d %s: %s\n", i, ti.root, ti.state);
    }
    if (fa4__cache_num_tiers(c) == 0) {
        char desc[1024];
        fa4__cache_describe(c, desc, sizeof desc);
        fprintf(stderr, "fa4jit cache: no cache tiers: %s", desc);
    }
    return c;
}

/* ------------------------------------------------------------------------------ ls */

typedef struct ls_state {
    fa4__cache *c;
    const opts *o;
    time_t now;
    int count, first;
} ls_state;

static int ls_item(const fa4__cache_item *it, void *ud)
{
    ls_state *s = ud;
    if (it->kind != FA4__ITEM_ENTRY)
        return 0;
    fa4__cache_check chk;
    fa4__cache_check_file(s->c, it->path, it->key, &chk);
    char arch[32] = "", programs[256] = "";
    if (chk.result == FA4__ENTRY_OK) {
        key_field(chk.key_inputs, chk.key_inputs_len, "arch", arch, sizeof arch);
        for (int i = 0; i < chk.entry.num_blobs; i++) {
            if (!is_program(chk.entry.blobs[i].name))
                continue;
            size_t used = strlen(programs);
            snprintf(programs + used, sizeof programs - used, "%s%s", used ? "," : "",
                     chk.entry.blobs[i].name);
        }
    }
    const char *state = chk.result == FA4__ENTRY_OK ? "ok" : fa4__cache_check_reason(&chk);
    if (s->o->json) {
        printf("%s{\"tier\":%d,\"key\":\"%s\",\"size\":%lld,\"mtime\":%lld,\"arch\":", s->first ? "" : ",",
               it->tier, it->key, (long long)it->size, (long long)it->mtime);
        json_cstr(arch);
        printf(",\"programs\":[");
        int n = 0;
        for (int i = 0; chk.result == FA4__ENTRY_OK && i < chk.entry.num_blobs; i++)
            if (is_program(chk.entry.blobs[i].name)) {
                printf("%s", n++ ? "," : "");
                json_cstr(chk.entry.blobs[i].name);
            }
        printf("],\"signed\":%s,\"state\":", chk.is_signed ? "true" : "false");
        json_cstr(state);
        printf(",\"path\":");
        json_cstr(it->path);
        printf("}\n");
    } else {
        char size[32], age[32];
        human_size(it->size, size, sizeof size);
        human_age((int64_t)s->now - it->mtime, age, sizeof age);
        printf("%-4d %s  %10s  %5s  %-8s %-6s %s\n", it->tier, it->key, size, age,
               arch[0] ? arch : "-", state, programs);
    }
    s->first = 0;
    s->count++;
    fa4__cache_check_free(&chk);
    return 0;
}

static int cmd_ls(const opts *o)
{
    fa4__cache *c = open_cache(o, 0);
    if (!c)
        return 2;
    ls_state s = {c, o, time(NULL), 0, 1};
    int rc = 0;
    if (o->json)
        printf("{\"entries\":[\n");
    else
        printf("%-4s %-32s  %10s  %5s  %-8s %-6s %s\n", "TIER", "KEY", "SIZE", "AGE", "ARCH",
               "STATE", "PROGRAMS");
    for (int i = 0; i < fa4__cache_num_tiers(c); i++) {
        fa4__cache_tier_info ti;
        fa4__cache_tier_info_get(c, i, &ti);
        if (ti.enabled && fa4__cache_foreach(c, i, ls_item, &s) != 0) {
            fprintf(stderr, "fa4jit cache ls: cannot read %s: %s\n", ti.dir, strerror(errno));
            rc = 2;
        }
    }
    if (o->json)
        printf("]}\n");
    else if (s.count == 0)
        printf("(no entries)\n");
    fa4__cache_close(c);
    return rc;
}

/* ------------------------------------------------------------------------------ stats */

typedef struct tier_count {
    int64_t n[5], bytes[5];
} tier_count;

static int count_item(const fa4__cache_item *it, void *ud)
{
    tier_count *t = ud;
    t->n[it->kind]++;
    t->bytes[it->kind] += it->size;
    return 0;
}

static int cmd_stats(const opts *o)
{
    fa4__cache *c = open_cache(o, 0);
    if (!c)
        return 2;
    int rc = 0;
    if (o->json)
        printf("{\"max_size\":%lld,\"max_entry\":%lld,\"hmac\":%s,\"require_hmac\":%s,\"tiers\":[",
               (long long)fa4__cache_max_size(c), (long long)fa4__cache_max_entry(c),
               fa4__cache_auth_level(c) & 1 ? "true" : "false",
               fa4__cache_auth_level(c) & 2 ? "true" : "false");
    for (int i = 0; i < fa4__cache_num_tiers(c); i++) {
        fa4__cache_tier_info ti;
        fa4__cache_tier_info_get(c, i, &ti);
        tier_count t;
        memset(&t, 0, sizeof t);
        if (ti.enabled && fa4__cache_foreach(c, i, count_item, &t) != 0) {
            fprintf(stderr, "fa4jit cache stats: cannot read %s: %s\n", ti.dir, strerror(errno));
            rc = 2;
        }
        if (o->json) {
            printf("%s\n{\"tier\":%d,\"dir\":", i ? "," : "", i);
            json_cstr(ti.dir);
            printf(",\"writable\":%s,\"shared\":%s,\"enabled\":%s,\"state\":",
                   ti.declared_rw ? "true" : "false", ti.shared ? "true" : "false",
                   ti.enabled ? "true" : "false");
            json_cstr(ti.state);
            printf(",\"entries\":%lld,\"bytes\":%lld,\"temp_files\":%lld,\"lock_files\":%lld,"
                   "\"quarantined\":%lld,\"other_files\":%lld}",
                   (long long)t.n[FA4__ITEM_ENTRY], (long long)t.bytes[FA4__ITEM_ENTRY],
                   (long long)t.n[FA4__ITEM_TEMP], (long long)t.n[FA4__ITEM_LOCK],
                   (long long)t.n[FA4__ITEM_QUARANTINE], (long long)t.n[FA4__ITEM_OTHER]);
        } else {
            char size[32], limit[32];
            human_size(t.bytes[FA4__ITEM_ENTRY], size, sizeof size);
            human_size(fa4__cache_max_size(c), limit, sizeof limit);
            printf("tier %d  %s%s %s (%s)\n", i, ti.declared_rw ? "rw" : "ro",
                   ti.shared ? " shared" : "", ti.dir, ti.state);
            printf("  entries      %lld (%s", (long long)t.n[FA4__ITEM_ENTRY], size);
            if (ti.declared_rw)
                printf(" of %s", limit);
            printf(")\n  temp files   %lld\n  lock files   %lld\n  quarantined  %lld\n",
                   (long long)t.n[FA4__ITEM_TEMP], (long long)t.n[FA4__ITEM_LOCK],
                   (long long)t.n[FA4__ITEM_QUARANTINE]);
            if (t.n[FA4__ITEM_OTHER])
                printf("  other files  %lld (not ours; left alone)\n", (long long)t.n[FA4__ITEM_OTHER]);
        }
    }
    if (o->json)
        printf("\n]}\n");
    else
        printf("hmac: %s%s\n", fa4__cache_auth_level(c) & 1 ? "key loaded" : "no key",
               fa4__cache_auth_level(c) & 2 ? ", required" : "");
    fa4__cache_close(c);
    return rc;
}

/* ------------------------------------------------------------------------------ verify */

typedef struct verify_state {
    fa4__cache *c;
    const opts *o;
    fa4_ctx *ctx;            /* deviceless, cache off: for --recompile */
    int ok, bad, stale, same, differ, failed, first;
} verify_state;

/* Compile the entry's spec again and compare the programs. 0 same; 1 differs; 2 not comparable
 * (the entry comes from another kernel source or NVRTC); -1 the compile failed. */
static int recompile(verify_state *s, const char *key, const fa4__cache_entry *e, char *why,
                     size_t len)
{
    const fa4__cache_blob *spec_blob = NULL;
    for (int i = 0; i < e->num_blobs; i++)
        if (!strcmp(e->blobs[i].name, "spec"))
            spec_blob = &e->blobs[i];
    if (!spec_blob) {
        snprintf(why, len, "no spec blob to compile from");
        return -1;
    }
    fa4_kernel_spec spec;
    fa4__spec_storage *storage = NULL;
    if (fa4__spec_deserialize((const char *)spec_blob->data, spec_blob->size, &spec, &storage) !=
        FA4_OK) {
        snprintf(why, len, "spec blob does not parse");
        return -1;
    }
    fa4_kernel *k = NULL;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fa4_jit_compile(s->ctx, &spec, &k) != FA4_OK) {
        snprintf(why, len, "compile failed: %s", fa4_ctx_errmsg(s->ctx));
        goto out;
    }
    fa4_kernel_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (fa4_kernel_get_info(k, &info) != FA4_OK) {
        snprintf(why, len, "kernel info: %s", fa4_ctx_errmsg(s->ctx));
        goto out;
    }
    if (strcmp(info.key, key) != 0) {
        snprintf(why, len, "built from other key inputs (kernel sources or NVRTC changed since)");
        rc = 2;
        goto out;
    }
    int programs_in_entry = 0;
    for (int i = 0; i < e->num_blobs; i++)
        programs_in_entry += is_program(e->blobs[i].name);
    if (programs_in_entry != info.num_programs) {
        snprintf(why, len, "%d programs recompiled, %d in the entry", info.num_programs,
                 programs_in_entry);
        rc = 1;
        goto out;
    }
    rc = 0;
    for (int p = 0; p < info.num_programs && rc == 0; p++) {
        const fa4__cache_blob *b = NULL;
        for (int i = 0; i < e->num_blobs; i++)
            if (!strcmp(e->blobs[i].name, info.programs[p].name))
                b = &e->blobs[i];
        size_t size = 0;
        if (!b || fa4_kernel_get_cubin(k, p, NULL, &size) != FA4_OK) {
            snprintf(why, len, "program %s missing", info.programs[p].name);
            rc = 1;
            break;
        }
        free(buf);
        buf = malloc(size ? size : 1);
        if (!buf || fa4_kernel_get_cubin(k, p, buf, &size) != FA4_OK) {
            snprintf(why, len, "cannot read the cubin of %s", info.programs[p].name);
            rc = -1;
            break;
        }
        if (size != b->size || memcmp(buf, b->data, size) != 0) {
            snprintf(why, len, "program %s: cubin differs (%zu bytes now, %zu cached)",
                     info.programs[p].name, size, b->size);
            rc = 1;
        }
    }
    /* out: kernel, cubin buffer and spec storage released on every path */
out:
    free(buf);
    fa4_kernel_destroy(k);
    fa4__spec_storage_free(storage);
    return rc;
}

static int verify_item(const fa4__cache_item *it, void *ud)
{
    verify_state *s = ud;
    if (it->kind != FA4__ITEM_ENTRY)
        return 0;
    fa4__cache_check chk;
    fa4__cache_check_file(s->c, it->path, it->key, &chk);
    const char *verdict;
    char why[512] = "";
    int bad = 0;
    if (chk.result != FA4__ENTRY_OK) {
        verdict = "bad";
        snprintf(why, sizeof why, "%s", fa4__cache_check_reason(&chk));
        bad = 1;
        s->bad++;
    } else if (strcmp(chk.libver, FA4_VERSION_STRING) != 0) {
        verdict = "stale";
        snprintf(why, sizeof why, "written by library %s; never used by %s", chk.libver,
                 FA4_VERSION_STRING);
        s->stale++;
    } else {
        verdict = "ok";
        s->ok++;
        if (s->o->recompile) {
            int r = recompile(s, it->key, &chk.entry, why, sizeof why);
            if (r == 0) {
                s->same++;
                snprintf(why, sizeof why, "recompiled: identical");
            } else if (r == 1) {
                verdict = "differs";
                s->differ++;
                bad = 1;
            } else if (r == 2) {
                verdict = "stale";
                s->ok--;
                s->stale++;
            } else {
                verdict = "recompile-failed";
                s->failed++;
                bad = 1;
            }
        }
    }
    if (s->o->json) {
        printf("%s{\"tier\":%d,\"key\":\"%s\",\"result\":\"%s\",\"detail\":", s->first ? "" : ",",
               it->tier, it->key, verdict);
        json_cstr(why);
        printf(",\"path\":");
        json_cstr(it->path);
        printf("}\n");
    } else if (bad || why[0]) {
        printf("%-16s %s  %s\n", verdict, it->key, why);
    }
    s->first = 0;
    fa4__cache_check_free(&chk);
    return 0;
}

static int cmd_verify(const opts *o)
{
    fa4__cache *c = open_cache(o, 0);
    if (!c)
        return 2;
    verify_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.o = o;
    s.first = 1;
    if (o->recompile) {
        fa4_ctx_options co;
        fa4_ctx_options_init(&co);
        co.device = FA4_DEVICE_NONE;
        co.cache_mode = FA4_CACHE_MODE_OFF;
        if (fa4_ctx_create(&co, &s.ctx) != FA4_OK) {
            fprintf(stderr, "fa4jit cache verify: cannot compile: %s\n", fa4_ctx_create_errmsg());
            fa4__cache_close(c);
            return 2;
        }
    }
    int rc = 0;
    if (o->json)
        printf("{\"entries\":[\n");
    for (int i = 0; i < fa4__cache_num_tiers(c); i++) {
        fa4__cache_tier_info ti;
        fa4__cache_tier_info_get(c, i, &ti);
        if (ti.enabled && fa4__cache_foreach(c, i, verify_item, &s) != 0) {
            fprintf(stderr, "fa4jit cache verify: cannot read %s: %s\n", ti.dir, strerror(errno));
            rc = 2;
        }
    }
    if (o->json) {
        printf("],\"ok\":%d,\"bad\":%d,\"stale\":%d", s.ok, s.bad, s.stale);
        if (o->recompile)
            printf(",\"identical\":%d,\"differ\":%d,\"recompile_failed\":%d", s.same, s.differ,
                   s.failed);
        printf("}\n");
    } else {
        printf("%d ok, %d bad, %d stale", s.ok, s.bad, s.stale);
        if (o->recompile)
            printf("; recompiled: %d identical, %d differ, %d failed", s.same, s.differ, s.failed);
        printf("\n");
    }
    fa4_ctx_destroy(s.ctx);
    fa4__cache_close(c);
    if (rc)
        return rc;
    return s.bad || s.differ || s.failed ? 1 : 0;
}

/* ------------------------------------------------------------------------------ prune, clear */

static int cmd_prune_clear(const opts *o, int clear)
{
    fa4__cache *c = open_cache(o, 1);
    if (!c)
        return 2;
    int rc = 0, writable = 0;
    if (o->json)
        printf("{\"tiers\":[");
    for (int i = 0; i < fa4__cache_num_tiers(c); i++) {
        fa4__cache_tier_info ti;
        fa4__cache_tier_info_get(c, i, &ti);
        if (!ti.enabled || !ti.writable)
            continue;
        fa4__cache_prune_result r;
        int st = clear ? fa4__cache_clear(c, i, &r) : fa4__cache_prune(c, i, o->max_size, &r);
        if (st != 0) {
            fprintf(stderr, "fa4jit cache %s: cannot read %s: %s\n", o->cmd, ti.dir, strerror(errno));
            rc = 2;
        }
        if (r.errors)
            rc = 2;
        if (o->json) {
            printf("%s\n{\"tier\":%d,\"dir\":", writable ? "," : "", i);
            json_cstr(ti.dir);
            printf(",\"entries_before\":%llu,\"bytes_before\":%llu,\"removed_entries\":%llu,"
                   "\"removed_bytes\":%llu,\"removed_temp\":%llu,\"removed_locks\":%llu,"
                   "\"errors\":%llu}",
                   (unsigned long long)r.entries, (unsigned long long)r.bytes,
                   (unsigned long long)r.removed_entries, (unsigned long long)r.removed_bytes,
                   (unsigned long long)r.removed_temp, (unsigned long long)r.removed_locks,
                   (unsigned long long)r.errors);
        } else {
            char before[32], removed[32];
            human_size((int64_t)r.bytes, before, sizeof before);
            human_size((int64_t)r.removed_bytes, removed, sizeof removed);
            printf("%s: %llu entries (%s) before; removed %llu entries (%s), %llu temp files, "
                   "%llu lock files%s\n",
                   ti.dir, (unsigned long long)r.entries, before, (unsigned long long)r.removed_entries,
                   removed, (unsigned long long)r.removed_temp, (unsigned long long)r.removed_locks,
                   r.errors ? "; some files could not be removed" : "");
        }
        writable++;
    }
    if (o->json)
        printf("\n]}\n");
    else if (!writable)
        printf("no writable cache tier\n");
    fa4__cache_close(c);
    return rc;
}

/* ------------------------------------------------------------------------------ entry point */

int fa4__cli_cache(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    const char *shared_env = getenv("FA4JIT_CACHE_SHARED");
    o.shared = shared_env && !strcmp(shared_env, "1");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--recompile")) {
            o.recompile = 1;
        } else if (!strcmp(a, "--shared")) {
            o.shared = 1;
        } else if (!strcmp(a, "--require-hmac")) {
            o.require_hmac = 1;
        } else if (!strcmp(a, "--cache-dir") || !strcmp(a, "--hmac-key") ||
                   !strcmp(a, "--max-size")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "fa4jit cache: %s needs a value\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--cache-dir"))
                o.dir = v;
            else if (!strcmp(a, "--hmac-key"))
                o.hmac_key = v;
            else if ((o.max_size = fa4__cache_parse_size(v)) <= 0) {
                fprintf(stderr, "fa4jit cache: --max-size '%s' is not a size (e.g. 500M, 2G)\n", v);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "fa4jit cache: unknown option '%s' (see fa4jit cache --help)\n", a);
            return 2;
        } else if (!o.cmd) {
            o.cmd = a;
        } else {
            fprintf(stderr, "fa4jit cache: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!o.cmd) {
        fputs(usage_text, stderr);
        return 2;
    }
    if (o.recompile && strcmp(o.cmd, "verify") != 0) {
        fprintf(stderr, "fa4jit cache: --recompile belongs to verify\n");
        return 2;
    }
    if (o.max_size && strcmp(o.cmd, "prune") != 0) {
        fprintf(stderr, "fa4jit cache: --max-size belongs to prune\n");
        return 2;
    }
    if (!strcmp(o.cmd, "ls"))
        return cmd_ls(&o);
    if (!strcmp(o.cmd, "stats"))
        return cmd_stats(&o);
    if (!strcmp(o.cmd, "verify"))
        return cmd_verify(&o);
    if (!strcmp(o.cmd, "prune"))
        return cmd_prune_clear(&o, 0);
    if (!strcmp(o.cmd, "clear"))
        return cmd_prune_clear(&o, 1);
    fprintf(stderr, "fa4jit cache: unknown command '%s' (ls, stats, verify, prune, clear)\n", o.cmd);
    return 2;
}

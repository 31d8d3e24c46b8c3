/* hfault: an LD_PRELOAD shim that makes file calls fail on command, below every library.
 *
 * Built by the tests (tests/stores/faults/shim.py) with the system compiler. It interposes
 * fsync, fdatasync, ftruncate(64), write, pwrite(64), rename(at), link(at) and, for calls
 * on files whose path starts with HFAULT_PATH, counts them per operation and fails the ones
 * the rules name. Rules come from HFAULT_RULES (counting calls from the start) and, when
 * HFAULT_CONTROL names a file, from that file, read again whenever it changes (its rules
 * count calls from then on). A rule is
 *
 *     op:N[+][:ERRNO[:MODE]]      e.g.  fdatasync:3:EIO   write:2+:ENOSPC   fsync:1:EIO:after
 *
 * op: fsync fdatasync ftruncate write pwrite rename link (pwrite covers pwrite64, ftruncate
 * ftruncate64, rename renameat/renameat2, link linkat); N: the Nth matching call (1-based),
 * with "+" every call from the Nth on; ERRNO: EIO (default) or ENOSPC; MODE: "fail" (default,
 * the call is not made) or "after" (the call is made, then reported as failed). HFAULT_PATH
 * ending in "$" names one file exactly (not its "-wal" neighbour). Rules are
 * separated by commas or newlines. Every injected fault appends one line to HFAULT_LOG:
 * "<op> <count> <errno-name> <mode> <path>"; with HFAULT_TRACE set, every other matching call
 * too, as "<op> <count> - pass <path>". Calls on other files pass straight through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

enum { OP_FSYNC, OP_FDATASYNC, OP_FTRUNCATE, OP_WRITE, OP_PWRITE, OP_RENAME, OP_LINK, OP_COUNT };
static const char *const OP_NAMES[OP_COUNT] = {"fsync", "fdatasync", "ftruncate", "write",
                                               "pwrite", "rename", "link"};
enum { MAX_RULES = 32 };

struct rule {
    int op;
    long n;
    int every_after; /* "+" */
    int err;
    int after; /* make the call, then report failure */
    int ctl;   /* from the control file: counted from when it was read */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rule rules[MAX_RULES];
static int nrules = -1; /* -1: not loaded yet */
static long counts[OP_COUNT];     /* calls since the start (HFAULT_RULES) */
static long ctl_counts[OP_COUNT]; /* calls since the control file was last read */
static struct timespec control_mtime;
static off_t control_size = -1;
static ino_t control_ino;
static char prefix[PATH_MAX];
static size_t prefix_len;
static __thread int inside; /* our own calls (logging) pass through */

static int parse_errno(const char *name) {
    if (strcmp(name, "ENOSPC") == 0) return ENOSPC;
    if (strcmp(name, "EIO") == 0) return EIO;
    if (strcmp(name, "EDQUOT") == 0) return EDQUOT;
    return 0;
}

/* Replace the rules from one source (ctl: the control file) with those in `text`. */
static void parse_rules(const char *text, int ctl) {
    int kept = 0;
    for (int i = 0; i < (nrules < 0 ? 0 : nrules); i++)
        if (rules[i].ctl != ctl) rules[kept++] = rules[i];
    nrules = kept;
    if (ctl) memset(ctl_counts, 0, sizeof ctl_counts);
    if (text == NULL) return;
    char buf[4096];
    strncpy(buf, text, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",\n", &save); item != NULL && nrules < MAX_RULES;
         item = strtok_r(NULL, ",\n", &save)) {
        while (*item == ' ') item++;
        if (*item == 0 || *item == '#') continue;
        char *fields[4] = {NULL, NULL, NULL, NULL};
        char *inner = NULL;
        int count = 0;
        for (char *f = strtok_r(item, ":", &inner); f != NULL && count < 4; f = strtok_r(NULL, ":", &inner))
            fields[count++] = f;
        if (count < 2) continue;
        struct rule r = {.op = -1, .n = 0, .every_after = 0, .err = EIO, .after = 0, .ctl = ctl};
        for (int op = 0; op < OP_COUNT; op++)
            if (strcmp(fields[0], OP_NAMES[op]) == 0) r.op = op;
        char *end = NULL;
        r.n = strtol(fields[1], &end, 10);
        if (end != NULL && *end == '+') r.every_after = 1;
        if (fields[2] != NULL) r.err = parse_errno(fields[2]);
        if (fields[3] != NULL) r.after = strcmp(fields[3], "after") == 0;
        if (r.op < 0 || r.n < 1 || r.err == 0) {
            fprintf(stderr, "hfault: ignoring bad rule %s\n", fields[0]);
            continue;
        }
        rules[nrules++] = r;
    }
}

/* Load the rules on first use; re-read the control file when it changed. Holds `lock`. */
static void refresh(void) {
    if (nrules < 0) {
        const char *p = getenv("HFAULT_PATH");
        if (p != NULL) {
            strncpy(prefix, p, sizeof prefix - 1);
            prefix_len = strlen(prefix);
        }
        nrules = 0;
        parse_rules(getenv("HFAULT_RULES"), 0);
    }
    const char *control = getenv("HFAULT_CONTROL");
    if (control == NULL) return;
    struct stat st;
    if (stat(control, &st) != 0) return;
    if (st.st_ino == control_ino && st.st_size == control_size && st.st_mtim.tv_sec == control_mtime.tv_sec &&
        st.st_mtim.tv_nsec == control_mtime.tv_nsec)
        return;
    char text[4096];
    int fd = open(control, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got < 0) return;
    text[got] = 0;
    control_size = st.st_size;
    control_mtime = st.st_mtim;
    control_ino = st.st_ino;
    parse_rules(text, 1);
}

/* HFAULT_PATH is a prefix; ending in "$" it names one file exactly. */
static int under_prefix(const char *path) {
    if (prefix_len > 1 && prefix[prefix_len - 1] == '$')
        return strlen(path) == prefix_len - 1 && strncmp(path, prefix, prefix_len - 1) == 0;
    return prefix_len > 0 && strncmp(path, prefix, prefix_len) == 0;
}

static int fd_path(int fd, char *out, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n < 0) return 0;
    out[n] = 0;
    return 1;
}

static void log_fault(const char *op, long count, int err, int after, const char *path) {
    const char *log = getenv("HFAULT_LOG");
    if (log == NULL) return;
    char line[PATH_MAX + 128];
    int len = snprintf(line, sizeof line, "%s %ld %s %s %s\n", op, count,
                       err == 0 ? "-" : err == ENOSPC ? "ENOSPC" : err == EDQUOT ? "EDQUOT" : "EIO",
                       after < 0 ? "pass" : after ? "after" : "fail", path);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    inside = 1;
    ssize_t ignored = syscall(SYS_write, fd, line, (size_t)len);
    (void)ignored;
    inside = 0;
    close(fd);
}

/* The fault for this call of `op` on `path`, if a rule names it: fills *rule, returns 1. */
static int decide(int op, const char *path, struct rule *out) {
    if (inside || !under_prefix(path)) return 0;
    int hit = 0;
    long count;
    pthread_mutex_lock(&lock);
    refresh();
    long since_start = ++counts[op];
    long since_armed = ++ctl_counts[op];
    count = since_start;
    for (int i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        long n = r->ctl ? since_armed : since_start;
        if (r->op == op && (n == r->n || (r->every_after && n > r->n))) {
            count = n;
            *out = *r;
            hit = 1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (hit)
        log_fault(OP_NAMES[op], count, out->err, out->after, path);
    else if (getenv("HFAULT_TRACE") != NULL)
        log_fault(OP_NAMES[op], count, 0, -1, path);
    return hit;
}

static int decide_fd(int op, int fd, struct rule *out) {
    if (inside) return 0;
    if (nrules < 0 || prefix_len == 0) {
        pthread_mutex_lock(&lock);
        refresh();
        pthread_mutex_unlock(&lock);
    }
    if (prefix_len == 0) return 0;
    char path[PATH_MAX];
    if (!fd_path(fd, path, sizeof path)) return 0;
    return decide(op, path, out);
}

static int decide_path(int op, int dirfd, const char *path, struct rule *out) {
    if (inside || path == NULL) return 0;
    if (nrules < 0) {
        pthread_mutex_lock(&lock);
        refresh();
        pthread_mutex_unlock(&lock);
    }
    if (prefix_len == 0) return 0;
    char full[PATH_MAX * 2 + 2];
    if (path[0] == '/') {
        snprintf(full, sizeof full, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (getcwd(base, sizeof base) == NULL) return 0;
        } else if (!fd_path(dirfd, base, sizeof base)) {
            return 0;
        }
        snprintf(full, sizeof full, "%s/%s", base, path);
    }
    return decide(op, full, out);
}

#define REAL(name) \
    static __typeof__(&name) real_##name; \
    if (real_##name == NULL) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

/* A wrapper: the real call unless a rule names this one; with "after", the real call first. */
#define WRAP(ret, name, params, args, decision)            \
    ret name params {                                      \
        REAL(name);                                        \
        struct rule r;                                     \
        if (!(decision)) return real_##name args;          \
        if (r.after) real_##name args;                     \
        errno = r.err;                                     \
        return -1;                                         \
    }

WRAP(int, fsync, (int fd), (fd), decide_fd(OP_FSYNC, fd, &r))
WRAP(int, fdatasync, (int fd), (fd), decide_fd(OP_FDATASYNC, fd, &r))
WRAP(int, ftruncate, (int fd, off_t length), (fd, length), decide_fd(OP_FTRUNCATE, fd, &r))
WRAP(int, ftruncate64, (int fd, off_t length), (fd, length), decide_fd(OP_FTRUNCATE, fd, &r))
WRAP(ssize_t, write, (int fd, const void *buf, size_t count), (fd, buf, count), decide_fd(OP_WRITE, fd, &r))
WRAP(ssize_t, pwrite, (int fd, const void *buf, size_t count, off_t offset), (fd, buf, count, offset),
     decide_fd(OP_PWRITE, fd, &r))
WRAP(ssize_t, pwrite64, (int fd, const void *buf, size_t count, off_t offset), (fd, buf, count, offset),
     decide_fd(OP_PWRITE, fd, &r))
WRAP(int, rename, (const char *from, const char *to), (from, to), decide_path(OP_RENAME, AT_FDCWD, to, &r))
WRAP(int, renameat, (int fromfd, const char *from, int tofd, const char *to), (fromfd, from, tofd, to),
     decide_path(OP_RENAME, tofd, to, &r))
WRAP(int, renameat2, (int fromfd, const char *from, int tofd, const char *to, unsigned int flags),
     (fromfd, from, tofd, to, flags), decide_path(OP_RENAME, tofd, to, &r))
WRAP(int, link, (const char *from, const char *to), (from, to), decide_path(OP_LINK, AT_FDCWD, to, &r))
WRAP(int, linkat, (int fromfd, const char *from, int tofd, const char *to, int flags),
     (fromfd, from, tofd, to, flags), decide_path(OP_LINK, tofd, to, &r))

/* A qemu TCG plugin that counts the guest instructions a run retires: at
 * translation each block gets an inline "add its instruction count" on every
 * execution (no callback, no log), and at exit the total is written to the
 * file named by the plugin's `out=` argument. With `bysymbol=1` it also
 * writes, after the total, one line per function of the main binary ("COUNT
 * NAME", from its ELF symbols) and one for everything else (shared libraries,
 * "COUNT (shared libraries)"): where the instructions go.
 *
 * Debian ships qemu's plugin-capable qemu-user but not its plugin header, so
 * the few entry points used here are declared below, as qemu 7.2 documents
 * them (plugin API version 1). The count is checked against a loop of known
 * length by count_instructions.py --self-check. Single-threaded runs only:
 * the inline add is not atomic across vCPU threads.
 *
 *   gcc -shared -fPIC -O2 insn_count_plugin.c -o insn_count_plugin.so
 *   qemu-aarch64 -plugin ./insn_count_plugin.so,out=COUNT_FILE PROGRAM ...
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn;
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const char *qemu_plugin_insn_symbol(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t retired;
static char out_path[4096];
static int by_symbol;

/* Per-symbol counters: an open-addressed table keyed by the symbol string's
 * address (qemu keeps one string per symbol); slot 0's key NULL is "no symbol". */
enum { kSlots = 1 << 16 };
static const char *slot_name[kSlots];
static uint64_t slot_count[kSlots];
static int slot_used[kSlots];

static uint64_t *symbol_counter(const char *name) {
  size_t h = ((uintptr_t)name >> 3) * 0x9E3779B97F4A7C15ull >> 48;
  for (size_t i = 0; i < kSlots; ++i) {
    size_t at = (h + i) & (kSlots - 1);
    if (!slot_used[at]) {
      slot_used[at] = 1;
      slot_name[at] = name;
      return &slot_count[at];
    }
    if (slot_name[at] == name) return &slot_count[at];
  }
  return NULL; /* full: counted in the total only */
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &retired, n);
  if (by_symbol && n > 0) {
    uint64_t *counter = symbol_counter(qemu_plugin_insn_symbol(qemu_plugin_tb_get_insn(tb, 0)));
    if (counter) qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, counter, n);
  }
}

static void write_count(qemu_plugin_id_t id, void *userdata) {
  (void)id, (void)userdata;
  FILE *f = fopen(out_path, "w");
  if (!f) return;
  fprintf(f, "%llu\n", (unsigned long long)retired);
  for (size_t i = 0; by_symbol && i < kSlots; ++i)
    if (slot_used[i] && slot_count[i])
      fprintf(f, "%llu %s\n", (unsigned long long)slot_count[i], slot_name[i] ? slot_name[i] : "(shared libraries)");
  fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i)
    if (strncmp(argv[i], "out=", 4) == 0) snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
    else if (strcmp(argv[i], "bysymbol=1") == 0) by_symbol = 1;
  if (!out_path[0]) return -1; /* nowhere to write the count: refuse to load */
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, write_count, NULL);
  return 0;
}

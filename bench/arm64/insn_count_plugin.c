/* A qemu TCG plugin that counts the guest instructions a run retires: at
 * translation each block gets an inline "add its instruction count" on every
 * execution (no callback, no log), and at exit the total is written to the
 * file named by the plugin's `out=` argument.
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
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t retired;
static char out_path[4096];

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &retired, qemu_plugin_tb_n_insns(tb));
}

static void write_count(qemu_plugin_id_t id, void *userdata) {
  (void)id, (void)userdata;
  FILE *f = fopen(out_path, "w");
  if (!f) return;
  fprintf(f, "%llu\n", (unsigned long long)retired);
  fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i)
    if (strncmp(argv[i], "out=", 4) == 0) snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
  if (!out_path[0]) return -1; /* nowhere to write the count: refuse to load */
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, write_count, NULL);
  return 0;
}

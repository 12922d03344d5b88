/* LMDX_thread: every accepted parameter list, a prototype, and main without parameters. */
LMDX_thread worker(void *arg);

LMDX_thread worker(void *arg) {
  int *n = arg;
  *n += 1;
  if (*n > 3) return arg;
}

LMDX_thread no_argument() { LMDX_exit_thread(); }

LMDX_thread void_argument(void) {
  /* { braces in comments } and "} in strings" do not end the body */
  const char *s = "}";
  (void)s;
}

static LMDX_thread constant(const void *const arg) { return (void *)arg; }

int main(void) {
  int n = 0;
  lmdx_thread_t t = LMDX_start_thread(worker, &n);
  return LMDX_join_thread(t) == 0;
}

/* The calls lmdxpp rewrites, and main with its arguments. */
#include <stdio.h>

LMDX_thread prod(void *arg) {
  LMDX_sema_P(e);
  LMDX_sema_P("s");
  LMDX_sema_V(s);
  LMDX_sema_V(n);
  return arg;
}

LMDX_thread cons(void *arg) {
  LMDX_lock(L);
  if (LMDX_trylock(other) == 0) LMDX_unlock(other);
  LMDX_unlock(L);
  LMDX_exit_thread(arg);
}

int main(int argc, char **argv) {
  LMDX_barrier_init(a, 2);
  LMDX_barrier_init("b" "c", argc + 1);
  LMDX_sema_init(s, 1);
  LMDX_sema_init(n, 0);
  LMDX_sema_init(e, 10);
  LMDX_start_thread(prod);
  lmdx_thread_t c = LMDX_start_thread(cons, argv[0]);
  LMDX_start_dthread(prod, (void *)1);
  LMDX_start_thread_on(1, prod);
  LMDX_start_thread_on(argc % 2, cons, NULL);
  LMDX_barrier(a);
  LMDX_kill_thread(prod);
  LMDX_join_thread(prod);
  printf("%p\n", LMDX_join_thread(c));
  return 0;
}

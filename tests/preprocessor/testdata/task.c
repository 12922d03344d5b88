/* LMDX_task: a prototype, a definition, calls that become spawns (with shared and computed
 * arguments), the name used as a value, and a member that shares the name. */
struct call {
  int n;
  long long result;
};

struct holder {
  void (*fib)(struct call *);
};

LMDX_shared struct call shared_call;

LMDX_task fib(struct call *c);

LMDX_task fib(struct call *c) {
  if (c->n < 2) {
    c->result = c->n;
    return;
  }
  struct call calls[2] = {{c->n - 1, 0}, {c->n - 2, 0}};
  for (int i = 0; i < 2; i++) fib(&calls[i]);
  LMDX_wait();
  c->result = calls[0].result + calls[1].result;
}

int main(void) {
  struct holder h = {0};
  void (*as_value)(struct call *) = fib;
  (void)as_value;
  (void)h.fib;
  shared_call.n = 20;
  fib(&shared_call);
  LMDX_wait();
  return shared_call.result == 6765 ? 0 : 1;
}

"""What a test that drives UCX needs under ThreadSanitizer, beside :ucx_under_tsan."""

# UCX's memory hooks patch the allocator's symbols, which ThreadSanitizer intercepts too: with
# them on, a test dies at its first UCX worker.
UCX_UNDER_TSAN_ENV = {
    "UCX_MEM_EVENTS": "no",
    "UCX_MEM_MALLOC_HOOKS": "no",
}

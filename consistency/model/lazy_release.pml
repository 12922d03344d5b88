/*
 * A model of the core of LMDX's lazy consistency protocols, hlrc and lrc
 * (consistency/home_based/, consistency/write_notices.*, sync/service.cc), for SPIN.
 *
 * What is checked: DRF-SC. Every read of a data-race-free execution returns the value of the last
 * write before it in happens-before. Ghost state outside the protocol tracks happens-before (see
 * "Happens-before" below); an access that races is never taken, so every path explored is
 * race-free, and every read asserts that it sees the last write.
 *
 * Programs are generated as the search goes: at every step any thread that is not blocked may
 * read or write any word of any page (a value of 0..VALUES-1, so a write can put back an older
 * value), lock or unlock the lock, or (thread 0 of each node) arrive at the barrier. Reads and
 * writes are unbounded in number (the state space is finite without a bound); lock acquisitions
 * (LOCK_BUDGET) and barrier rounds (ROUNDS) are bounded, which bounds the interval numbers.
 * With -DSCRIPT=1 or 2 each thread runs a fixed program instead (scenarios A and B of README.md)
 * and only the interleaving is free; with -DSCRIPT=3 or 4 (skeletons A and B) the programs have
 * the scenarios' synchronisation and each access slot is any access.
 *
 * Build flags (check_model.sh sets them per configuration). With no BUG_ flag the model is the
 * code as it is, with fixes A, B and C (README.md).
 *   -DLRC            lrc instead of hlrc
 *   -DBUG_A          hlrc as before fix A: an acquire does not look at the home's own twinned
 *                    pages (DropHomeTwins), so a one-sided diff hidden under the home's twin goes
 *                    unnoticed; fix C's rule in Flush closes that bug too, so it shows only
 *                    with -DBUG_C
 *   -DBUG_B          as before fix B: ForgetKnownEverywhere drops every notice the departure names
 *   -DBUG_C          as before fix C: a home page held at a release whose diff against its twin
 *                    is empty closes no notice (Flush), and fix A's dropped twin counts as written
 *                    only if it differs from memory (DropHomeTwins)
 *   -DSCRIPT=n       0 generated programs (the default), 1 and 2 scenarios, 3 and 4 skeletons
 *   -DCS_ONLY        generated programs whose accesses are all inside critical sections
 *   -DDIFF_PATH=n    hlrc diffs to a home: 0 as messages (ServeDiffs patches the home's twin),
 *                    1 one-sided (the twin is left as it was), 2 either, chosen at every
 *                    release (the default)
 *   -DFIRST_PATH=n   hlrc first copies: 0 asked for (ServeFetch; the default, and the code's
 *                    path when one-sided access is off or a registry is full), 1 registered in
 *                    the home's registry and read one-sidedly where the code would
 *                    (TakeRegisteredCopies), 2 either, chosen at every fault (the code's usual
 *                    path over shm; it multiplies the states, so its configurations are smaller)
 *   -DBUG_R          a registered copy joins the home's directory at its next taking, and the
 *                    page counts as written only if the home then holds it writable: a page a
 *                    first-copy fetch made read-only since the last taking is not named
 *   -DBUG_R0         a registered copy joins the directory and nothing else happens (the home
 *                    neither takes its write access nor names the page)
 *   -DRW_RACES=0     do not look for a read racing with a later write (default 1: such a write is
 *                    not taken)
 *   -DLOCK_BUDGET=n, -DROUNDS=n, -DNODES=n, -DTPN=n (threads per node), -DPAGES=n, -DWORDS=n,
 *   -DVALUES=n, -DKMAX=n (lrc: diffs kept per node and page)
 *
 * Abstractions (README.md says why each is sound for the property):
 *   - Each protocol entry point is one atomic step: a fault with its fetch (Obtain and
 *     FetchAndInstall), a release (OnRelease with Flush), an acquire (OnAcquire with Merge,
 *     Invalidate, BringHomePagesUpToDate). The C++ code makes each of them atomic for the page
 *     it works on with the page table's busy marks and stripe locks, and one at a time per node
 *     with flush_mutex_ and acquire_mutex_, which the model therefore does not need.
 *   - A page is WORDS words; a diff is the set of words that differ from the twin (byte-exact
 *     runs, as consistency/diff.h, at word granularity).
 *   - lrc's garbage collection, the refetch at acquire, prefetch of coherence units, first-touch
 *     homes, trylock, semaphores and the update/rc protocols are left out.
 */

/* ---------------------------------------------------------------------------- configuration */

#ifndef NODES
#define NODES 3
#endif
#ifndef TPN
#define TPN 2            /* threads per node */
#endif
#ifndef PAGES
#define PAGES 2
#endif
#ifndef WORDS
#define WORDS 1
#endif
#ifndef VALUES
#define VALUES 3         /* a write stores 0 .. VALUES-1; memory starts at 0 */
#endif
#ifndef LOCK_BUDGET
#define LOCK_BUDGET 5    /* lock acquisitions in all */
#endif
#ifndef ROUNDS
#define ROUNDS 1         /* barrier rounds */
#endif
#ifndef KMAX
#define KMAX (LOCK_BUDGET + ROUNDS)  /* lrc: kept diffs per node and page (one per release) */
#endif
#ifndef DIFF_PATH
#define DIFF_PATH 2
#endif
#ifndef FIRST_PATH
#define FIRST_PATH 0
#endif
/* The registry's state and steps exist only where a first copy may be registered. */
#if !defined(LRC) && FIRST_PATH != 0
#define REGISTRY 1
#else
#define REGISTRY 0
#endif
#ifndef RW_RACES
#define RW_RACES 1
#endif
#ifndef SCRIPT
#define SCRIPT 0
#endif

#define THREADS (NODES * TPN)
#define NODE(t) ((t) / TPN)
#define HOME(p) ((p) % NODES)  /* page p is homed at node p (block placement) */
#define KQUIET 2               /* kQuietReleasesKept in home_based_protocol.h */
#define NOVAL 255              /* a word absent from a diff */
#define NOBODY 255

/* Access, as consistency/page_table.h. */
#define NONE 0
#define READ 1
#define WRITE 2

/* Flat indices. */
#define NP(n, p) ((n) * PAGES + (p))                     /* node, page */
#define NPW(n, p, w) (((n) * PAGES + (p)) * WORDS + (w))   /* node, page, word */
#define NPN(n, p, m) (((n) * PAGES + (p)) * NODES + (m))   /* node, page, writer */
#define PN(p, m) ((p) * NODES + (m))                      /* page, writer (a payload) */
#define PW(p, w) ((p) * WORDS + (w))                      /* page, word (a location) */
#define NN(n, m) ((n) * NODES + (m))                      /* node, writer */
#define NPK(n, p, k) (((n) * PAGES + (p)) * KMAX + (k))
#define NPKW(n, p, k, w) ((((n) * PAGES + (p)) * KMAX + (k)) * WORDS + (w))
#define LOCS (PAGES * WORDS)

/* -------------------------------------------------------------------- protocol state per node */

/* The node's copy of each page (PageMemory) and its access (PageTable). */
byte mem[NODES * PAGES * WORDS];
byte acc[NODES * PAGES];
/* CopyState (home_based_protocol.h): the twin, the writes kept by an invalidation (`saved`, one
 * composite diff: applying several in order is the same as applying their overlay), and
 * quiet_releases. The pages of dirty_ that Flush() holds are exactly those with a twin (a page
 * invalidated or made read-only since stays in dirty_ but is skipped), so dirty_ is not kept
 * apart. The words of an absent twin are 0, of an absent saved diff NOVAL. */
bool hastwin[NODES * PAGES];
byte twin[NODES * PAGES * WORDS];
byte saved[NODES * PAGES * WORDS];
byte quiet[NODES * PAGES];
/* Fix A (home_rewritten_): a home page whose twin an acquire dropped counts as written by this
 * node in its current interval (its next release closes a notice for it); with BUG_C only if the
 * twin differed from memory. */
bool homew[NODES * PAGES];
/* HomeDirectory::Shared at the page's home: some other node has fetched it. */
bool shared[PAGES];
/* hlrc's one-sided first copies (TakeRegisteredCopies in serving.cc). copyof: the home counts
 * the node among the page's copies (known_copies_ at the node); reg: a copy registered in the
 * home's registry that the home has not taken yet; servedfirst: at the home, a page a
 * first-copy fetch made read-only since the registry was last taken (served_first_). */
#if REGISTRY
bool copyof[NODES * PAGES];
bool reg[NODES * PAGES];
bool servedfirst[PAGES];
#endif

/* WriteNoticeLog (write_notices.h). log_ and seen_ per (page, writer); newest_logged_ per writer.
 * clk stands for next_interval_ and newest_received_ together: the next interval this node
 * closes is clk + 1 (Close: max(next_interval_, newest_received_ + 1)). 0 is "none". */
byte wlog[NODES * PAGES * NODES];
byte seen[NODES * PAGES * NODES];
byte know[NODES * NODES];
byte clk[NODES];

#ifdef LRC
/* lazy.cc: required_ per (page, writer) at each node; home_version_ at each page's home;
 * kept_diffs_ per (node, page): KMAX slots of (interval, words), oldest first. */
byte req[NODES * PAGES * NODES];
byte hver[PAGES * NODES];
byte kiv[NODES * PAGES * KMAX];
byte kv[NODES * PAGES * KMAX * WORDS];
#endif

/* ------------------------------------------------------------------------------- the lock */

/* sync/service.cc's distributed queue, for one lock. The token is at node `tok` (on its way
 * there while `fly`, a kLockGrant in flight), held by thread `holder`. lpay is the payload that
 * travels with the token: Object::released while it rests, the trimmed grant while it flies.
 * lq: the node's threads waiting, in order (Object::queue). dq: the nodes whose requests the
 * manager has forwarded, in order (each node's Object::next, from the token on), with the
 * Knowledge() each request carried (rk). */
byte tok = 0;            /* the token starts at the manager, node 0 */
bool fly;
byte holder = NOBODY;
byte lpay[PAGES * NODES];
byte lq[NODES * TPN];    /* thread + 1, 0 = empty */
bool requested[NODES];
byte dq[NODES];          /* node + 1, 0 = empty */
byte rk[NODES * NODES];
byte locks_left = LOCK_BUDGET;

/* ---------------------------------------------------------------------------- the barrier */

/* A named barrier whose count is NODES: thread 0 of every node takes part. The manager merges
 * the arrivals' payloads (MergePayloads / WriteNoticeLog::MergeEncoded: the newest interval of
 * each notice; fix B: the component-wise minimum of the senders' knowledge). When the round is
 * full the merged payload is frozen as the departure, which each node takes in at its own time
 * while the next round fills. */
byte barrived;
byte bacc[PAGES * NODES];
byte bacck[NODES];
byte bdep[PAGES * NODES];
byte bdepk[NODES];
byte bdep_left;
byte bpass[NODES];

/* ---------------------------------------------------------------------------- the threads */

#define RUN 0
#define LOCKWAIT 1
#define BARWAIT 2    /* arrived, the round not yet full */
#define BARDEP 3     /* the departure has come; OnAcquire not yet run */
byte wait[THREADS];
bool holds[THREADS];

#if SCRIPT
#define SMAX 10
hidden byte script[THREADS * SMAX];
byte pc[THREADS];
#endif

/* -------------------------------------------------------------------------- happens-before */

/* Ghost state, outside the protocol. It follows the vector clocks of each thread t (clock t),
 * of the lock (LOCKC: the clock its last release left), of the barrier's filling round (FILLC:
 * the join of the arrivals so far) and of its departing round (DEPC). For each location x:
 *   after[x]        the clocks (a bit each) that cover x's last write;
 *   lastval[x]      the value of that write;
 * and with RW_RACES:
 *   readers[x]      the threads that read x since that write;
 *   rr[x*CLOCKS+c]  the threads whose last read of x clock c covers.
 * A write sets after = {writer}; a read by u makes u's read the one covered by u alone. A release
 * of the lock gives the lock's entries the releaser's (the releaser's clock covers the lock's), an
 * acquire joins the lock's into the acquirer's; an arrival joins the thread's into the filling
 * round, a full round becomes the departing one, a departure joins it into the thread's. These
 * are exactly the vector-clock comparisons "the event <= VC(c)". */
#define LOCKC THREADS
#define FILLC (THREADS + 1)
#define DEPC (THREADS + 2)
#define CLOCKS (THREADS + 3)
#define CBIT(c) (1 << (c))
#define ALLCLOCKS ((1 << CLOCKS) - 1)
short after[LOCS];
byte lastval[LOCS];
#if RW_RACES
byte readers[LOCS];
byte rr[LOCS * CLOCKS];
#endif

hidden byte hx;

inline hb_join(dst, src) {  /* dst's clock := dst's joined with src's */
  for (hx : 0 .. LOCS - 1) {
    if :: (after[hx] & CBIT(src)) != 0 -> after[hx] = after[hx] | CBIT(dst) :: else fi;
#if RW_RACES
    rr[hx * CLOCKS + dst] = rr[hx * CLOCKS + dst] | rr[hx * CLOCKS + src]
#endif
  }
}

inline hb_assign(dst, src) {  /* dst's clock := src's */
  for (hx : 0 .. LOCS - 1) {
    if
    :: (after[hx] & CBIT(src)) != 0 -> after[hx] = after[hx] | CBIT(dst)
    :: else -> after[hx] = after[hx] & (ALLCLOCKS - CBIT(dst))
    fi;
#if RW_RACES
    rr[hx * CLOCKS + dst] = rr[hx * CLOCKS + src]
#endif
  }
}

inline hb_clear(dst) {  /* dst's clock := the initial one (a round that is over) */
  for (hx : 0 .. LOCS - 1) {
    after[hx] = after[hx] & (ALLCLOCKS - CBIT(dst));
#if RW_RACES
    rr[hx * CLOCKS + dst] = 0
#endif
  }
}

/* A read by t of x is race-free when t's clock covers x's last write. */
#define READ_OK(t, x) ((after[x] & CBIT(t)) != 0)
/* A write by t of x: its clock covers the last write and (RW_RACES) every read since. */
#if RW_RACES
#define WRITE_OK(t, x) \
  (READ_OK(t, x) && (readers[x] & ~(rr[(x) * CLOCKS + (t)] | CBIT(t))) == 0)
#else
#define WRITE_OK(t, x) READ_OK(t, x)
#endif

inline hb_read(t, x) {
#if RW_RACES
  readers[x] = readers[x] | CBIT(t);
  for (hx : 0 .. CLOCKS - 1) { rr[(x) * CLOCKS + hx] = rr[(x) * CLOCKS + hx] & ~CBIT(t) };
  rr[(x) * CLOCKS + (t)] = rr[(x) * CLOCKS + (t)] | CBIT(t)
#else
  skip
#endif
}

inline hb_write(t, x) {
  after[x] = CBIT(t);
#if RW_RACES
  readers[x] = 0;
  for (hx : 0 .. CLOCKS - 1) { rr[(x) * CLOCKS + hx] = 0 }
#endif
}

/* ---------------------------------------------------------------------------- temporaries */

/* Used within one atomic step only, so not part of the state. */
hidden byte i, j, k, m, p2, w2, h2, iv, top, slot;
hidden byte written;         /* OnRelease: pages whose writes the release made visible */
hidden byte news;            /* OnAcquire: pages named by notices that are news here */
hidden byte changed;
hidden byte got, expected;   /* a read: the value it returns, the last write's */
hidden byte keep[PAGES * WORDS];  /* lrc: the diff a release keeps, per page */
hidden byte stage[WORDS];         /* a page being fetched */

/* ------------------------------------------------------------------------------ diffs */

/* changed := the page's memory differs from its twin (AppendDiff is not empty). */
inline twin_differs(n, p) {
  changed = false;
  for (w2 : 0 .. WORDS - 1) {
    if :: twin[NPW(n, p, w2)] != mem[NPW(n, p, w2)] -> changed = true :: else fi
  }
}

/* CopyState::twin.reset(); with no twin the page leaves dirty_ and its quiet count restarts. */
inline drop_twin(n, p) {
  hastwin[NP(n, p)] = false;
  quiet[NP(n, p)] = 0;
  for (w2 : 0 .. WORDS - 1) { twin[NPW(n, p, w2)] = 0 }
}

/* StartWriting() in home_based_protocol.cc: a twin if none, then write access. */
inline start_writing(n, p) {
  if
  :: !hastwin[NP(n, p)] ->
     hastwin[NP(n, p)] = true;
     for (w2 : 0 .. WORDS - 1) { twin[NPW(n, p, w2)] = mem[NPW(n, p, w2)] }
  :: else
  fi;
  acc[NP(n, p)] = WRITE
}

#ifdef LRC
/* lrc: apply writer m's kept diff of page p with interval iv (if any) to `stage`. */
inline apply_kept_to_stage(m, p, iv) {
  for (k : 0 .. KMAX - 1) {
    if
    :: kiv[NPK(m, p, k)] == iv ->
       for (w2 : 0 .. WORDS - 1) {
         if :: kv[NPKW(m, p, k, w2)] != NOVAL -> stage[w2] = kv[NPKW(m, p, k, w2)] :: else fi
       }
    :: else
    fi
  }
}

/* The largest interval any node has numbered so far. */
inline top_interval() {
  top = 0;
  for (m : 0 .. NODES - 1) { if :: clk[m] > top -> top = clk[m] :: else fi }
}

/* BringHomePagesUpToDate() in lazy.cc, for one page at its home n: MissingDiffs() against
 * home_version_ (the diffs of every writer but the home from the interval after the one the copy
 * holds up to the newest this node has heard of), applied in interval order (ApplyToCopy: the
 * twin is patched too), then home_version_ raised to what was asked. */
inline bring_home_up_to_date(n, p) {
  for (w2 : 0 .. WORDS - 1) { stage[w2] = NOVAL };
  top_interval();
  for (iv : 1 .. top) {
    for (m : 0 .. NODES - 1) {
      if
      :: m != n && iv > hver[PN(p, m)] && iv <= req[NPN(n, p, m)] -> apply_kept_to_stage(m, p, iv)
      :: else
      fi
    }
  };
  for (w2 : 0 .. WORDS - 1) {
    if
    :: stage[w2] != NOVAL ->
       mem[NPW(n, p, w2)] = stage[w2];
       if :: hastwin[NP(n, p)] -> twin[NPW(n, p, w2)] = stage[w2] :: else fi
    :: else
    fi
  };
  for (m : 0 .. NODES - 1) {
    if :: m != n && req[NPN(n, p, m)] > hver[PN(p, m)] -> hver[PN(p, m)] = req[NPN(n, p, m)]
       :: else fi
  }
}

/* HomeCopyLacksDiffs() in lazy.cc. */
inline home_lacks(n, p) {
  changed = false;
  for (m : 0 .. NODES - 1) {
    if :: m != n && req[NPN(n, p, m)] > hver[PN(p, m)] -> changed = true :: else fi
  }
}
#endif

/* ------------------------------------------------------------------------- faults, fetches */

#if REGISTRY
/* TakeRegisteredCopies() in serving.cc, at node h: the copies registered with h join its
 * directory. A first copy of a page h holds writable (it wrote it with no fault) takes h's write
 * access; such a page, or one a first-copy fetch made read-only since the last taking, may have
 * changed after the copy was read, and counts as written at h's next release (home_rewritten_,
 * the flag fix A uses). */
inline take_registered(h) {
  for (p2 : 0 .. PAGES - 1) {
    if
    :: HOME(p2) == h ->
       for (m : 0 .. NODES - 1) {
         if
         :: reg[NP(m, p2)] ->
            reg[NP(m, p2)] = false;
            if
            :: !shared[p2] ->
               shared[p2] = true;
#ifndef BUG_R0
               if
               :: acc[NP(h, p2)] == WRITE ->
                  acc[NP(h, p2)] = READ; drop_twin(h, p2); homew[NP(h, p2)] = true
               :: else
               fi;
#endif
               skip
            :: else
            fi;
#if !defined(BUG_R) && !defined(BUG_R0)
            if :: servedfirst[p2] -> homew[NP(h, p2)] = true :: else fi;
#endif
            printf("@   node %d takes node %d's registered copy of p%d\n", h, m, p2)
         :: else
         fi
       };
       servedfirst[p2] = false
    :: else
    fi
  }
}
#endif

/* FetchAndInstall() in home_based_protocol.cc, for one page of node n (not its home), with the
 * home's ServeFetch() in serving.cc. hlrc: `via` registers a first copy and reads it one-sidedly
 * (RegisterCopies, ReadHomeCopies); the model takes the registration and the read as one step,
 * which the fences between them make sound (a release whose taking misses the registration
 * happened before the read: README.md). A copy the home knows of is read one-sidedly too, with
 * nothing done at the home. */
inline fetch(n, p, via) {
  h2 = HOME(p);
#if REGISTRY
  changed = false;  /* this node's writes kept by an invalidation: then the home is asked */
  for (w2 : 0 .. WORDS - 1) {
    if :: saved[NPW(n, p, w2)] != NOVAL -> changed = true :: else fi
  };
  if
  :: !changed && !copyof[NP(n, p)] && via ->
     reg[NP(n, p)] = true;
     copyof[NP(n, p)] = true;
     printf("@   node %d registers its first copy of p%d\n", n, p)
  :: !changed && copyof[NP(n, p)] -> skip
  :: else ->
#endif
  /* ServeFetch: the first copy makes the page shared; a home that wrote it freely loses its
   * write access (and any twin), so that its next write faults. */
  if
  :: !shared[p] ->
     shared[p] = true;
     if
     :: acc[NP(h2, p)] == WRITE ->
        acc[NP(h2, p)] = READ; drop_twin(h2, p)
#if REGISTRY
        ; servedfirst[p] = true
#endif
     :: else
     fi
  :: else
  fi;
#if REGISTRY
     copyof[NP(n, p)] = true
  fi;
#endif
  for (w2 : 0 .. WORDS - 1) { stage[w2] = mem[NPW(h2, p, w2)] };
#ifdef LRC
  /* MissingDiffs() against the home's version: other writers' diffs after the interval the
   * home's copy holds up to the newest this node heard of; this node's own (AppendOwnDiffs)
   * after the interval the home holds; in interval order, writer order within one. */
  top_interval();
  for (iv : 1 .. top) {
    for (m : 0 .. NODES - 1) {
      if
      :: m == n && iv > hver[PN(p, m)] -> apply_kept_to_stage(m, p, iv)
      :: m != n && m != h2 && iv > hver[PN(p, m)] && iv <= req[NPN(n, p, m)] ->
         apply_kept_to_stage(m, p, iv)
      :: else
      fi
    }
  };
#endif
  /* This node's writes not yet sent (kept by an invalidation) go over the copy, last. */
  for (w2 : 0 .. WORDS - 1) {
    if :: saved[NPW(n, p, w2)] != NOVAL -> stage[w2] = saved[NPW(n, p, w2)] :: else fi;
    mem[NPW(n, p, w2)] = stage[w2]
  };
  acc[NP(n, p)] = READ
}

/* Obtain() in home_based_protocol.cc: the fault of a thread of node n wanting `wanted`. */
inline obtain(n, p, wanted, via) {
  if
  :: acc[NP(n, p)] >= wanted -> skip
  :: else ->
     if
     :: HOME(p) == n ->
#ifdef LRC
        /* Notices named the page before this node touched it: its diffs first. */
        home_lacks(n, p);
        if :: changed -> bring_home_up_to_date(n, p) :: else fi;
#endif
        /* OpenAtHome(): a page no other node holds is written with no fault and no twin. */
        if
        :: !shared[p] -> acc[NP(n, p)] = WRITE
        :: shared[p] && wanted == READ -> acc[NP(n, p)] = READ
        :: else -> start_writing(n, p)
        fi
     :: else ->
        if :: acc[NP(n, p)] == NONE -> fetch(n, p, via) :: else fi;
        if :: wanted == WRITE -> start_writing(n, p) :: else fi
     fi
  fi
}

/* ----------------------------------------------------------------------------- accesses */

/* A load of the application (a fault on a page it may not read runs Obtain first). */
inline do_read(t, p, w, via) {
  obtain(NODE(t), p, READ, via);
  printf("@ T%d (node %d): read p%d.%d = %d\n", t, NODE(t), p, w, mem[NPW(NODE(t), p, w)]);
  /* DRF-SC: the read is after the last write (its guard), so it must see it. */
  got = mem[NPW(NODE(t), p, w)];
  expected = lastval[PW(p, w)];
  assert(got == expected);
  hb_read(t, PW(p, w))
}

/* A store of the application (a fault on a page it may not write runs Obtain first); the home
 * writes its own copy, every other node its copy under a twin. */
inline do_write(t, p, w, v, via) {
  obtain(NODE(t), p, WRITE, via);
  mem[NPW(NODE(t), p, w)] = v;
  printf("@ T%d (node %d): write p%d.%d := %d\n", t, NODE(t), p, w, v);
  lastval[PW(p, w)] = v;
  hb_write(t, PW(p, w))
}

/* ------------------------------------------------------------------------------- release */

/* hlrc: a diff reaches its home. One-sided (WriteDiffsAtHome, PageMemory::WriteHomeCopies): the
 * bytes land in the home's memory and nothing else changes. As a message (ServeDiffs in
 * serving.cc): ApplyToCopy, which patches the home's twin too. */
inline diff_to_home(p, w, v, onesided) {
  mem[NPW(HOME(p), p, w)] = v;
  if
  :: !onesided && hastwin[NP(HOME(p), p)] -> twin[NPW(HOME(p), p, w)] = v
  :: else
  fi
}

/* OnRelease() in release.cc (the caller copies the log out as the payload): Flush(), then
 * WriteNoticeLog::Close() of the written pages, lrc's NumberKeptDiffs(). */
inline on_release(n, onesided) {
#if REGISTRY
  take_registered(n);  /* Flush() takes the registry first */
#endif
  written = 0;
  for (i : 0 .. PAGES * WORDS - 1) { keep[i] = NOVAL };
  for (p2 : 0 .. PAGES - 1) {
    /* The writes kept by invalidations (CopyState::saved): to the home (hlrc), kept (lrc). */
    for (w2 : 0 .. WORDS - 1) {
      if
      :: saved[NPW(n, p2, w2)] != NOVAL ->
#ifdef LRC
         keep[PW(p2, w2)] = saved[NPW(n, p2, w2)];
#else
         diff_to_home(p2, w2, saved[NPW(n, p2, w2)], onesided);
#endif
         saved[NPW(n, p2, w2)] = NOVAL;
         written = written | (1 << p2)
      :: else
      fi
    }
  };
  for (p2 : 0 .. PAGES - 1) {
    /* Flush() step 1 and 2: the pages written since the last release (a twin, write access). */
    if
    :: hastwin[NP(n, p2)] ->
       assert(acc[NP(n, p2)] == WRITE);
       twin_differs(n, p2);
       if
       :: changed ->
          for (w2 : 0 .. WORDS - 1) {
            if
            :: twin[NPW(n, p2, w2)] != mem[NPW(n, p2, w2)] ->
               if
               :: HOME(p2) == n -> skip  /* the home's copy is the master */
               :: else ->
#ifdef LRC
                  keep[PW(p2, w2)] = mem[NPW(n, p2, w2)];
#else
                  diff_to_home(p2, w2, mem[NPW(n, p2, w2)], onesided);
#endif
                  skip
               fi;
               twin[NPW(n, p2, w2)] = mem[NPW(n, p2, w2)]  /* the fresh twin */
            :: else
            fi
          };
          quiet[NP(n, p2)] = 0;
          written = written | (1 << p2)
       :: else ->
          /* Unchanged: kept writable for up to kQuietReleasesKept quiet releases. */
          quiet[NP(n, p2)] = quiet[NP(n, p2)] + 1;
#ifndef BUG_C
          /* Fix C: a home page held here was writable in the interval, so it closes a notice
           * whatever its diff (written_at_home), also at the quiet release that drops its twin:
           * it is written in place, and a copy fetched (or read one-sided) meanwhile may hold a
           * value it has since written back, which no diff against the twin shows. */
          if :: HOME(p2) == n -> written = written | (1 << p2) :: else fi;
#endif
          if :: quiet[NP(n, p2)] > KQUIET -> drop_twin(n, p2) :: else fi
       fi;
       if :: !hastwin[NP(n, p2)] -> acc[NP(n, p2)] = READ :: else fi
    :: else
    fi;
#ifndef LRC
    /* Fix A: a home page whose twin an acquire dropped is written in this interval (BUG_A never
     * sets the flag there); so is one a registered copy named (take_registered). */
    if :: homew[NP(n, p2)] -> homew[NP(n, p2)] = false; written = written | (1 << p2) :: else fi
#endif
  };
  if
  :: written != 0 ->
     /* WriteNoticeLog::Close(): a new interval, newer than every one received. */
     clk[n] = clk[n] + 1;
     for (p2 : 0 .. PAGES - 1) {
       if :: (written & (1 << p2)) != 0 -> wlog[NPN(n, p2, n)] = clk[n] :: else fi
     };
     know[NN(n, n)] = clk[n];
#ifdef LRC
     /* KeepDiff() and NumberKeptDiffs(): one kept diff per page and interval. */
     for (p2 : 0 .. PAGES - 1) {
       changed = false;
       for (w2 : 0 .. WORDS - 1) { if :: keep[PW(p2, w2)] != NOVAL -> changed = true :: else fi };
       if
       :: changed ->
          slot = NOBODY;
          for (k : 0 .. KMAX - 1) {
            if :: slot == NOBODY && kiv[NPK(n, p2, k)] == 0 -> slot = k :: else fi
          };
          assert(slot != NOBODY);  /* KMAX too small for this bound */
          kiv[NPK(n, p2, slot)] = clk[n];
          for (w2 : 0 .. WORDS - 1) { kv[NPKW(n, p2, slot, w2)] = keep[PW(p2, w2)] }
       :: else
       fi
     }
#endif
  :: else
  fi;
  if
  :: written != 0 ->
     printf("@   node %d releases: closes interval %d (pages mask %d)\n", n, clk[n], written)
  :: else -> printf("@   node %d releases: nothing written, no interval\n", n)
  fi
}

/* Encode(): the payload is the whole log (here, the lock's). */
inline copy_log(n) {
  for (i : 0 .. PAGES * NODES - 1) { lpay[i] = wlog[n * PAGES * NODES + i] }
}

/* ------------------------------------------------------------------------------- acquire */

/* Invalidate() in acquire.cc, for one page of node n that is not its home: the writes since the
 * twin are kept as a diff (saved), the access goes. The copy's bytes are dead until the next
 * fetch overwrites them, so the model zeroes them. */
inline invalidate(n, p) {
  if
  :: hastwin[NP(n, p)] ->
     for (w2 : 0 .. WORDS - 1) {
       if
       :: twin[NPW(n, p, w2)] != mem[NPW(n, p, w2)] -> saved[NPW(n, p, w2)] = mem[NPW(n, p, w2)]
       :: else
       fi
     };
     drop_twin(n, p)
  :: else
  fi;
  acc[NP(n, p)] = NONE;
  for (w2 : 0 .. WORDS - 1) { mem[NPW(n, p, w2)] = 0 }
}

/* The payload an acquire takes in: the lock's (src 0) or the barrier departure's (src 1). */
#define PAY(src, x) (src == 0 -> lpay[x] : bdep[x])
#define KN(src, x) (src == 0 -> 0 : bdepk[x])

/* OnAcquire() in acquire.cc with the payload of src (a lock grant's, or a barrier departure's:
 * `everyone`, a departure whose payloads cover every node, with the senders' minimum knowledge
 * for fix B). */
inline on_acquire(n, src, everyone) {
  /* WriteNoticeLog::Merge(): learn every notice (log_, newest_received_, newest_logged_); a
   * notice of another writer newer than seen_ is news and names its page. */
  news = 0;
  for (p2 : 0 .. PAGES - 1) {
    for (m : 0 .. NODES - 1) {
      iv = PAY(src, PN(p2, m));
      if
      :: iv != 0 ->
         if :: iv > clk[n] -> clk[n] = iv :: else fi;
         if :: iv > wlog[NPN(n, p2, m)] -> wlog[NPN(n, p2, m)] = iv :: else fi;
         if :: iv > know[NN(n, m)] -> know[NN(n, m)] = iv :: else fi;
         if
         :: m != n && iv > seen[NPN(n, p2, m)] ->
            seen[NPN(n, p2, m)] = iv;
            printf("@   node %d learns notice (p%d, node %d, interval %d)\n", n, p2, m, iv);
            news = news | (1 << p2);
#ifdef LRC
            /* LearnRequired() */
            if :: iv > req[NPN(n, p2, m)] -> req[NPN(n, p2, m)] = iv :: else fi;
#endif
            skip
         :: else
         fi
      :: else
      fi
    }
  };
  for (p2 : 0 .. PAGES - 1) {
    if
    :: (news & (1 << p2)) != 0 && acc[NP(n, p2)] != NONE ->
       if
       :: HOME(p2) != n ->
          printf("@   node %d drops its copy of p%d\n", n, p2);
          invalidate(n, p2)
       :: else ->
#ifdef LRC
          /* lrc: the home brings the page up to date at once. */
          printf("@   node %d brings its home page p%d up to date\n", n, p2);
          bring_home_up_to_date(n, p2)
#else
#ifndef BUG_A
          /* Fix A (hlrc, DropHomeTwins): a home page held with a twin may hide other writers'
           * one-sided diffs under it. It goes read-only and counts as written in this interval
           * (fix C: writable here means written; BUG_C: only if diff(twin, memory) is not
           * empty); the twin goes, so the next write faults and takes a fresh one. */
          if
          :: hastwin[NP(n, p2)] ->
             acc[NP(n, p2)] = READ;
#ifdef BUG_C
             twin_differs(n, p2);
#else
             changed = true;
#endif
             if :: changed -> homew[NP(n, p2)] = true :: else fi;
             printf("@   node %d (fix A): home page p%d read-only, twin dropped, written %d\n",
                    n, p2, changed);
             drop_twin(n, p2)
          :: else
          fi
#else
          skip
#endif
#endif
       fi
    :: else
    fi
  };
  if
  :: everyone ->
#ifdef BUG_B
     /* ForgetKnownEverywhere() before fix B: every notice the departure names goes. */
     for (i : 0 .. PAGES * NODES - 1) {
       if
       :: wlog[n * PAGES * NODES + i] != 0 && PAY(src, i) != 0 &&
          wlog[n * PAGES * NODES + i] <= PAY(src, i) -> wlog[n * PAGES * NODES + i] = 0
       :: else
       fi
     }
#else
     /* ForgetKnownEverywhere() after fix B: only notices (page, w, k) with k at most the least
      * knowledge of w among the arrivals, which every node had merged before arriving. */
     for (p2 : 0 .. PAGES - 1) {
       for (m : 0 .. NODES - 1) {
         if
         :: wlog[NPN(n, p2, m)] != 0 && wlog[NPN(n, p2, m)] <= KN(src, m) -> wlog[NPN(n, p2, m)] = 0
         :: else
         fi
       }
     }
#endif
  :: else
  fi;
  if
  :: everyone -> printf("@   node %d forgets the notices known everywhere\n", n)
  :: else
  fi
}

/* ------------------------------------------------------------------------------ the lock */

/* Service::Lock(): the token resting here and free is taken at once (OnAcquire with the resting
 * payload); otherwise the thread queues, and the node joins the distributed queue with its
 * Knowledge() if it has not already. */
inline lock_request(t) {
  locks_left--;
  if
  :: tok == NODE(t) && !fly && holder == NOBODY && lq[NODE(t) * TPN] == 0 ->
     holder = t;
     holds[t] = true;
     printf("@ T%d (node %d): lock (token here)\n", t, NODE(t));
     on_acquire(NODE(t), 0, false);
     for (i : 0 .. PAGES * NODES - 1) { lpay[i] = 0 };  /* Object::released is moved out */
     hb_join(t, LOCKC)
  :: else ->
     printf("@ T%d (node %d): lock requested\n", t, NODE(t));
     wait[t] = LOCKWAIT;
     for (i : 0 .. TPN - 1) {
       if :: lq[NODE(t) * TPN + i] == 0 -> lq[NODE(t) * TPN + i] = t + 1; break :: else fi
     };
     if
     :: tok != NODE(t) && !requested[NODE(t)] -> request_token(NODE(t))
     :: else
     fi
  fi
}

/* RequestLockLocked(): the request carries the node's Knowledge() (newest_logged_ per writer). */
inline request_token(n) {
  requested[n] = true;
  for (i : 0 .. NODES - 1) {
    if :: dq[i] == 0 -> dq[i] = n + 1; break :: else fi
  };
  for (i : 0 .. NODES - 1) { rk[NN(n, i)] = know[NN(n, i)] }
}

/* SendTokenLocked(): the token leaves for the first node of the queue, with the payload of the
 * last release trimmed (WriteNoticeLog::Trim) to what that node's request said it lacks. */
inline send_token() {
  j = dq[0] - 1;
  for (p2 : 0 .. PAGES - 1) {
    for (m : 0 .. NODES - 1) {
      if :: lpay[PN(p2, m)] <= rk[NN(j, m)] -> lpay[PN(p2, m)] = 0 :: else fi
    }
  };
  for (i : 0 .. NODES - 1) { rk[NN(j, i)] = 0 };
  for (i : 0 .. NODES - 2) { dq[i] = dq[i + 1] };
  dq[NODES - 1] = 0;
  printf("@   token to node %d\n", j);
  tok = j;
  fly = true
}

/* ServeLocalLocked() when a local thread waits: it gets the lock and the resting payload, and
 * runs OnAcquire. */
inline serve_local(n) {
  j = lq[n * TPN] - 1;
  for (i : 0 .. TPN - 2) { lq[n * TPN + i] = lq[n * TPN + i + 1] };
  lq[n * TPN + TPN - 1] = 0;
  holder = j;
  holds[j] = true;
  wait[j] = RUN;
  printf("@ T%d (node %d): lock granted\n", j, n);
  on_acquire(n, 0, false);
  for (i : 0 .. PAGES * NODES - 1) { lpay[i] = 0 };
  hb_join(j, LOCKC)
}

/* Service::Unlock(): OnRelease, then the token goes to the next node if one asked (this node's
 * waiting threads ask again), else to a local waiter, else it rests here. */
inline unlock(t, onesided) {
  printf("@ T%d (node %d): unlock\n", t, NODE(t));
  on_release(NODE(t), onesided);
  copy_log(NODE(t));
  hb_assign(LOCKC, t);
  holds[t] = false;
  holder = NOBODY;
  if
  :: dq[0] != 0 ->
     send_token();
     if
     :: lq[NODE(t) * TPN] != 0 && !requested[NODE(t)] -> request_token(NODE(t))
     :: else
     fi
  :: dq[0] == 0 && lq[NODE(t) * TPN] != 0 -> serve_local(NODE(t))
  :: else
  fi
}

/* ----------------------------------------------------------------------------- the barrier */

/* Service::Barrier(): OnRelease, the payload (and, fix B, the sender's knowledge) to the
 * manager; the last arrival makes the departure (MergePayloads). */
inline barrier_arrive(t, onesided) {
  printf("@ T%d (node %d): barrier arrival, round %d\n", t, NODE(t), bpass[NODE(t)]);
  on_release(NODE(t), onesided);
  for (i : 0 .. PAGES * NODES - 1) {
    if :: wlog[NODE(t) * PAGES * NODES + i] > bacc[i] -> bacc[i] = wlog[NODE(t) * PAGES * NODES + i]
       :: else fi
  };
  for (i : 0 .. NODES - 1) {
    if :: barrived == 0 || know[NN(NODE(t), i)] < bacck[i] -> bacck[i] = know[NN(NODE(t), i)]
       :: else fi
  };
  hb_join(FILLC, t);
  bpass[NODE(t)]++;
  barrived++;
  wait[t] = BARWAIT;
  if
  :: barrived == NODES ->
     assert(bdep_left == 0);
     for (i : 0 .. PAGES * NODES - 1) { bdep[i] = bacc[i]; bacc[i] = 0 };
     for (i : 0 .. NODES - 1) { bdepk[i] = bacck[i]; bacck[i] = 0 };
     hb_assign(DEPC, FILLC);
     hb_clear(FILLC);
     barrived = 0;
     bdep_left = NODES;
     for (i : 0 .. THREADS - 1) { if :: wait[i] == BARWAIT -> wait[i] = BARDEP :: else fi };
     printf("@   barrier round full\n")
  :: else
  fi
}

/* The departure reaches thread t's node (the kBarrierDepart handler wakes it) and Barrier() runs
 * OnAcquire with the merged payload of every node. */
inline barrier_depart(t) {
  printf("@ T%d (node %d): barrier departure\n", t, NODE(t));
  on_acquire(NODE(t), 1, true);
  hb_join(t, DEPC);
  wait[t] = RUN;
  bdep_left--;
  if
  :: bdep_left == 0 ->
     for (i : 0 .. PAGES * NODES - 1) { bdep[i] = 0 };
     for (i : 0 .. NODES - 1) { bdepk[i] = 0 };
     hb_clear(DEPC)
  :: else
  fi
}

/* ---------------------------------------------------------------------------- the program */

#if SCRIPT
/* A script is a sequence of operations per thread. */
#define OP_END 0
#define OP_LOCK 1
#define OP_UNLOCK 2
#define OP_BAR 3
#define OP_ANY 4   /* any one read or write, of any word and value */
#define OP_READ(p, w) (16 + (p) * WORDS + (w))
#define OP_WRITE(p, w, v) (64 + ((p) * WORDS + (w)) * 4 + (v))
#define OPAT(t) script[(t) * SMAX + pc[t]]
#define SHAPE_READ(t, p, w) (OPAT(t) == OP_READ(p, w) || OPAT(t) == OP_ANY)
#define SHAPE_WRITE(t, p, w, v) (OPAT(t) == OP_WRITE(p, w, v) || OPAT(t) == OP_ANY)
#define SHAPE_LOCK(t) (OPAT(t) == OP_LOCK)
#define SHAPE_UNLOCK(t) (OPAT(t) == OP_UNLOCK)
#define SHAPE_BAR(t) (OPAT(t) == OP_BAR)
#define ADVANCE(t) pc[t]++
#define S(t, k, op) script[(t) * SMAX + (k)] = op
#elif defined(CS_ONLY)
/* Generated programs whose accesses are all inside critical sections of the lock. */
#define SHAPE_READ(t, p, w) holds[t]
#define SHAPE_WRITE(t, p, w, v) holds[t]
#define SHAPE_LOCK(t) true
#define SHAPE_UNLOCK(t) true
#define SHAPE_BAR(t) true
#define ADVANCE(t) skip
#else
/* Generated programs: any operation at any time, within the budgets. */
#define SHAPE_READ(t, p, w) true
#define SHAPE_WRITE(t, p, w, v) true
#define SHAPE_LOCK(t) true
#define SHAPE_UNLOCK(t) true
#define SHAPE_BAR(t) true
#define ADVANCE(t) skip
#endif

#define IS_PARTICIPANT(t) ((t) % TPN == 0)

/* One atomic step of thread t (each its own transition, guard first). A race-free access only:
 * READ_OK and WRITE_OK are the happens-before guards. */
#define READ_STEP_PATH(t, p, w, via) \
  :: d_step { wait[t] == RUN && SHAPE_READ(t, p, w) && READ_OK(t, PW(p, w)) && VIA_OK(t, p, via) \
              -> do_read(t, p, w, via); ADVANCE(t) }
#define WRITE_STEP_PATH(t, p, w, v, via) \
  :: d_step { wait[t] == RUN && SHAPE_WRITE(t, p, w, v) && WRITE_OK(t, PW(p, w)) && \
              VIA_OK(t, p, via) -> do_write(t, p, w, v, via); ADVANCE(t) }
/* With both paths, the registered one is a step of its own only where it differs: a first copy
 * to fetch. */
#if defined(LRC) || FIRST_PATH != 2
#define VIA_OK(t, p, via) true
#else
#define VIA_OK(t, p, via) \
  (!(via) || (HOME(p) != NODE(t) && acc[NP(NODE(t), p)] == NONE && !copyof[NP(NODE(t), p)]))
#endif
#if defined(LRC) || FIRST_PATH == 0
#define READ_STEP(t, p, w) READ_STEP_PATH(t, p, w, false)
#define WRITE_STEP(t, p, w, v) WRITE_STEP_PATH(t, p, w, v, false)
#elif FIRST_PATH == 1
#define READ_STEP(t, p, w) READ_STEP_PATH(t, p, w, true)
#define WRITE_STEP(t, p, w, v) WRITE_STEP_PATH(t, p, w, v, true)
#else
#define READ_STEP(t, p, w) READ_STEP_PATH(t, p, w, false) READ_STEP_PATH(t, p, w, true)
#define WRITE_STEP(t, p, w, v) WRITE_STEP_PATH(t, p, w, v, false) \
  WRITE_STEP_PATH(t, p, w, v, true)
#endif
#define LOCK_STEP(t) \
  :: d_step { wait[t] == RUN && !holds[t] && locks_left > 0 && SHAPE_LOCK(t) -> \
              lock_request(t); ADVANCE(t) }
#define UNLOCK_STEP_PATH(t, onesided) \
  :: d_step { wait[t] == RUN && holds[t] && SHAPE_UNLOCK(t) -> unlock(t, onesided); ADVANCE(t) }
#define BAR_STEP_PATH(t, onesided) \
  :: d_step { wait[t] == RUN && IS_PARTICIPANT(t) && bpass[NODE(t)] < ROUNDS && SHAPE_BAR(t) -> \
              barrier_arrive(t, onesided); ADVANCE(t) }
#define DEPART_STEP(t) \
  :: d_step { wait[t] == BARDEP -> barrier_depart(t) }

#if defined(LRC) || DIFF_PATH == 1
#define UNLOCK_STEP(t) UNLOCK_STEP_PATH(t, true)
#define BAR_STEP(t) BAR_STEP_PATH(t, true)
#elif DIFF_PATH == 0
#define UNLOCK_STEP(t) UNLOCK_STEP_PATH(t, false)
#define BAR_STEP(t) BAR_STEP_PATH(t, false)
#else
#define UNLOCK_STEP(t) UNLOCK_STEP_PATH(t, true) UNLOCK_STEP_PATH(t, false)
#define BAR_STEP(t) BAR_STEP_PATH(t, true) BAR_STEP_PATH(t, false)
#endif

#if VALUES == 3
#define WRITE_VALUES(t, p, w) WRITE_STEP(t, p, w, 0) WRITE_STEP(t, p, w, 1) WRITE_STEP(t, p, w, 2)
#elif VALUES == 2
#define WRITE_VALUES(t, p, w) WRITE_STEP(t, p, w, 0) WRITE_STEP(t, p, w, 1)
#else
#error "VALUES must be 2 or 3"
#endif

#if WORDS == 1
#define PAGE_STEPS(t, p) READ_STEP(t, p, 0) WRITE_VALUES(t, p, 0)
#elif WORDS == 2
#define PAGE_STEPS(t, p) READ_STEP(t, p, 0) WRITE_VALUES(t, p, 0) \
  READ_STEP(t, p, 1) WRITE_VALUES(t, p, 1)
#else
#error "WORDS must be 1 or 2"
#endif

#if PAGES == 1
#define ACCESS_STEPS(t) PAGE_STEPS(t, 0)
#elif PAGES == 2
#define ACCESS_STEPS(t) PAGE_STEPS(t, 0) PAGE_STEPS(t, 1)
#else
#error "PAGES must be 1 or 2"
#endif

/* A home's progress thread takes the registry when it serves a fetch (ServeFetch starts with
 * it); the model lets it do so at any time, apart from the serving, since the serving's own
 * downgrade of the page comes after the taking and home writes can fall in between. */
#if !REGISTRY
#define TAKE_STEPS
#else
#define REG_PENDING(p) (reg[NP(0, p)] || reg[NP(1, p)] || reg[NP(2, p)])
#if NODES != 3
#error "the registry's taking steps assume 3 nodes"
#endif
#if PAGES == 1
#define TAKE_STEPS :: d_step { REG_PENDING(0) -> take_registered(0); skip }
#else
#define TAKE_STEPS :: d_step { REG_PENDING(0) -> take_registered(0); skip } \
  :: d_step { REG_PENDING(1) -> take_registered(1); skip }
#endif
#endif

#define THREAD_STEPS(t) ACCESS_STEPS(t) LOCK_STEP(t) UNLOCK_STEP(t) BAR_STEP(t) DEPART_STEP(t)

#if THREADS == 6
#define ALL_THREAD_STEPS THREAD_STEPS(0) THREAD_STEPS(1) THREAD_STEPS(2) THREAD_STEPS(3) \
  THREAD_STEPS(4) THREAD_STEPS(5)
#elif THREADS == 4
#define ALL_THREAD_STEPS THREAD_STEPS(0) THREAD_STEPS(1) THREAD_STEPS(2) THREAD_STEPS(3)
#elif THREADS == 3
#define ALL_THREAD_STEPS THREAD_STEPS(0) THREAD_STEPS(1) THREAD_STEPS(2)
#else
#error "NODES * TPN must be 3, 4 or 6"
#endif

init {
  atomic {
    for (i : 0 .. NODES * PAGES * WORDS - 1) { saved[i] = NOVAL };
    for (i : 0 .. LOCS - 1) { after[i] = ALLCLOCKS };
#if SCRIPT == 1
    /* Scenario A (hlrc, one-sided diffs). Page 0 is homed at node 0 (H); W is node 1, R node 2.
     * R shares the page, H writes 1 under the lock (kept writable, twin 1), W writes 2 under it
     * (one-sided into H's memory), R reads 2, H writes 1 again with no fault, R reads. */
    S(4, 0, OP_LOCK); S(4, 1, OP_READ(0, 0)); S(4, 2, OP_UNLOCK);
    S(4, 3, OP_LOCK); S(4, 4, OP_READ(0, 0)); S(4, 5, OP_UNLOCK);
    S(4, 6, OP_LOCK); S(4, 7, OP_READ(0, 0));
    S(0, 0, OP_LOCK); S(0, 1, OP_WRITE(0, 0, 1)); S(0, 2, OP_UNLOCK);
    S(0, 3, OP_LOCK); S(0, 4, OP_WRITE(0, 0, 1)); S(0, 5, OP_UNLOCK);
    S(2, 0, OP_LOCK); S(2, 1, OP_WRITE(0, 0, 2)); S(2, 2, OP_UNLOCK);
#elif SCRIPT == 2
    /* Scenario B (notices forgotten too early). Page 0 homed at node 0; A is node 0, W node 1,
     * Y node 2. Y1 reads x under the lock (Y's copy), W0 takes the lock after it and writes x,
     * A0 takes the lock and holds it across the barrier, leaves it and unlocks; Y1 waits for
     * the lock and reads x, while Y0 may not have taken the departure in. */
    S(5, 0, OP_LOCK); S(5, 1, OP_READ(0, 0)); S(5, 2, OP_UNLOCK);
    S(5, 3, OP_LOCK); S(5, 4, OP_READ(0, 0)); S(5, 5, OP_UNLOCK);
    S(2, 0, OP_LOCK); S(2, 1, OP_WRITE(0, 0, 1)); S(2, 2, OP_UNLOCK); S(2, 3, OP_BAR);
    S(0, 0, OP_LOCK); S(0, 1, OP_BAR); S(0, 2, OP_UNLOCK);
    S(4, 0, OP_BAR);
#elif SCRIPT == 3
    /* Skeleton A: scenario A's locking, every access any access (2 pages: 16 choices). */
    S(4, 0, OP_LOCK); S(4, 1, OP_ANY); S(4, 2, OP_UNLOCK);
    S(4, 3, OP_LOCK); S(4, 4, OP_ANY); S(4, 5, OP_UNLOCK);
    S(4, 6, OP_LOCK); S(4, 7, OP_ANY);
    S(0, 0, OP_LOCK); S(0, 1, OP_ANY); S(0, 2, OP_UNLOCK);
    S(0, 3, OP_LOCK); S(0, 4, OP_ANY); S(0, 5, OP_UNLOCK);
    S(2, 0, OP_LOCK); S(2, 1, OP_ANY); S(2, 2, OP_UNLOCK);
    S(1, 0, OP_ANY); S(3, 0, OP_ANY); S(5, 0, OP_ANY);
#elif SCRIPT == 4
    /* Skeleton B: scenario B's synchronisation, every access any access. */
    S(5, 0, OP_LOCK); S(5, 1, OP_ANY); S(5, 2, OP_UNLOCK);
    S(5, 3, OP_LOCK); S(5, 4, OP_ANY); S(5, 5, OP_UNLOCK);
    S(0, 0, OP_LOCK); S(0, 1, OP_ANY); S(0, 2, OP_BAR); S(0, 3, OP_UNLOCK);
    S(2, 0, OP_ANY); S(2, 1, OP_BAR); S(2, 2, OP_ANY);
    S(4, 0, OP_ANY); S(4, 1, OP_BAR); S(4, 2, OP_ANY);
    S(1, 0, OP_LOCK); S(1, 1, OP_ANY); S(1, 2, OP_UNLOCK); S(3, 0, OP_ANY);
#endif
  }
  run dsm()
}

/* The whole system: at each step, one thread's step or one message's arrival. Every state is a
 * valid end state (end_loop): a program may stop anywhere, and a thread may wait for ever for a
 * lock whose holder stopped. */
proctype dsm() {
end_loop:
  do
  ALL_THREAD_STEPS
  TAKE_STEPS
  /* The kLockGrant reaches the node it was sent to (GrantLocked): its first waiting thread gets
   * the lock (ServeLocalLocked) and runs OnAcquire. */
  :: d_step { fly -> fly = false; requested[tok] = false; printf("@   token at node %d\n", tok);
              if :: lq[tok * TPN] != 0 -> serve_local(tok) :: else fi }
  /* A forwarded request finds the token resting here (ForwardLocked): it leaves at once. */
  :: d_step { !fly && holder == NOBODY && dq[0] != 0 && lq[tok * TPN] == 0 -> send_token() }
  od
}

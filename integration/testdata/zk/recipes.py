#!/usr/bin/python3
"""Kazoo's recipes against a ZooKeeper-protocol endpoint (ZooKeeper, or corral's --zk-addr).

Runs each recipe with several clients (one session each, one thread each) and checks the recipe's invariant:

  lock         mutual exclusion: one holder at a time (checked in-process), and a counter znode that holders
               read and write without a version ends equal to the number of acquisitions
  election     one leader at a time, and every contender leads in turn as the one before it leaves
  counter      concurrent increments of kazoo's Counter sum exactly
  queue        Queue and LockingQueue: every item put is consumed exactly once
  barrier      Barrier: no waiter passes before the barrier is removed, all pass after;
               DoubleBarrier: no member passes enter() before all entered, nor leave() before all left
  party        Party: every member is seen while joined, none after leaving

Prints one JSON line per recipe ({"recipe": ..., "ok": true|false, ...}) and exits 0 only if every invariant held
(1 if one failed, 2 for bad arguments or no session at all).

--loop SECONDS runs the lock and counter recipes over and over for that long, so that a test can kill -9 a server
in the middle: the clients retry connecting without a limit on tries (KazooRetry(max_tries=-1)) but within a
deadline, so they move to another server within their session timeout and keep their sessions. In loop mode a
counter increment whose client lost its connection meanwhile may have been applied twice (kazoo's Counter retries
its versioned set after a connection loss, and the lost reply may have been a success), so the counter's invariant
is then a range: increments <= value <= increments + increments that saw a connection loss. Every wait has a
timeout: the script always stops by itself.

Needs Debian's python3-kazoo (run it with /usr/bin/python3).
"""

import argparse
import json
import os
import sys
import threading
import time
import uuid

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout
from kazoo.retry import KazooRetry

# How long one recipe may take before it counts as stuck, and how long one ZooKeeper call may keep retrying
# (across reconnects) before it gives up.
RECIPE_TIMEOUT = 60.0
CALL_DEADLINE = 30.0

print_lock = threading.Lock()

# Completed operations of the loop mode, for its progress lines: a test that kills a server in the middle can tell
# that the recipes moved on afterwards.
progress = {"lock": 0, "counter": 0}


def emit(obj):
    """Prints one JSON line at once (threads share stdout) and flushes it, so a test reading the pipe sees it."""
    with print_lock:
        sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
        sys.stdout.flush()


class Clients:
    """Opens kazoo clients, one session each, and counts each client's connection losses."""

    def __init__(self, hosts, session_timeout):
        self.hosts = hosts
        self.session_timeout = session_timeout
        self.all = []

    def new(self):
        # max_tries=-1: a client keeps trying the other servers while one is down (a failover); deadline bounds
        # each retried call, so that nothing waits forever on a cluster that is gone.
        conn_retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0, deadline=CALL_DEADLINE)
        cmd_retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0, deadline=CALL_DEADLINE)
        c = KazooClient(hosts=self.hosts, timeout=self.session_timeout,
                        connection_retry=conn_retry, command_retry=cmd_retry)
        c.suspensions = 0
        c.lost = 0

        def listen(state):
            # Called by kazoo's connection thread before it reconnects, so before a retried call returns.
            if state == KazooState.SUSPENDED:
                c.suspensions += 1
            elif state == KazooState.LOST:
                c.lost += 1
        c.add_listener(listen)
        c.start(timeout=CALL_DEADLINE)
        self.all.append(c)
        return c

    def close(self):
        for c in self.all:
            try:
                c.stop()
                c.close()
            except Exception:  # best effort: the result is already decided
                pass


def run_threads(fns, timeout):
    """Runs each fn in its own daemon thread; returns the exceptions they raised and the names of those that did
    not finish within timeout (daemon threads: a stuck one does not keep the process alive)."""
    errors = []
    threads = []

    def wrap(fn):
        def run():
            try:
                fn()
            except Exception as e:  # reported in the recipe's result
                errors.append("%s: %r" % (type(e).__name__, e))
        return run

    for i, fn in enumerate(fns):
        t = threading.Thread(target=wrap(fn), name="worker-%d" % i, daemon=True)
        t.start()
        threads.append(t)
    end = time.monotonic() + timeout
    stuck = []
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
        if t.is_alive():
            stuck.append(t.name)
    return errors, stuck


def verdict(result, errors, stuck):
    if errors:
        result["errors"] = errors[:10]
    if stuck:
        result["stuck"] = stuck
    result["ok"] = bool(result.get("ok", True)) and not errors and not stuck
    return result


# --- lock -------------------------------------------------------------------------------------------------------

def lock_recipe(clients, base, threads, rounds=None, until=None):
    """Threads contend for one kazoo Lock; inside it each checks it is alone and increments a znode without a
    version (a lost update would show if two held the lock at once). Runs rounds acquisitions per thread, or
    until the monotonic time until."""
    path = base + "/lock"
    counter_path = base + "/lock-counter"
    setup = clients.new()
    setup.ensure_path(counter_path)
    setup.set(counter_path, b"0")
    state = {"holder": None, "overlaps": 0, "acquisitions": 0, "timeouts": 0}
    mu = threading.Lock()

    def contender(i):
        c = clients.new()
        lock = c.Lock(path, "contender-%d" % i)
        n = 0
        while (rounds is not None and n < rounds) or (until is not None and time.monotonic() < until):
            n += 1
            try:
                got = lock.acquire(timeout=CALL_DEADLINE)
            except LockTimeout:
                got = False
            if not got:
                with mu:
                    state["timeouts"] += 1
                continue
            try:
                with mu:
                    if state["holder"] is not None:
                        state["overlaps"] += 1
                    state["holder"] = i
                # Not atomic on purpose: only the lock keeps these two calls from interleaving with another
                # holder's. A set retried after a connection loss writes the same value again, so it is
                # idempotent while the lock holds.
                value, _ = c.retry(c.get, counter_path)
                c.retry(c.set, counter_path, str(int(value) + 1).encode())
                with mu:
                    if state["holder"] != i:
                        state["overlaps"] += 1
                    state["holder"] = None
                    state["acquisitions"] += 1
                    progress["lock"] += 1
            finally:
                lock.release()

    errors, stuck = run_threads([lambda i=i: contender(i) for i in range(threads)],
                                RECIPE_TIMEOUT if until is None else until - time.monotonic() + RECIPE_TIMEOUT)
    value = int(setup.retry(setup.get, counter_path)[0])
    result = {"recipe": "lock", "threads": threads, "acquisitions": state["acquisitions"],
              "counter": value, "overlaps": state["overlaps"], "lock_timeouts": state["timeouts"],
              "ok": state["overlaps"] == 0 and value == state["acquisitions"] and state["acquisitions"] > 0}
    if rounds is not None:
        result["ok"] = result["ok"] and state["acquisitions"] == rounds * threads
    return verdict(result, errors, stuck)


# --- counter ----------------------------------------------------------------------------------------------------

def counter_recipe(clients, base, threads, rounds=None, until=None):
    """Threads increment one kazoo Counter; the value must be the number of increments (see the module doc for
    the range allowed across a connection loss)."""
    path = base + "/counter"
    state = {"increments": 0, "ambiguous": 0}
    mu = threading.Lock()

    def incrementer():
        c = clients.new()
        counter = c.Counter(path)
        n = 0
        while (rounds is not None and n < rounds) or (until is not None and time.monotonic() < until):
            n += 1
            before = c.suspensions
            counter += 1
            with mu:
                state["increments"] += 1
                state["ambiguous"] += c.suspensions - before
                progress["counter"] += 1

    errors, stuck = run_threads([incrementer] * threads,
                                RECIPE_TIMEOUT if until is None else until - time.monotonic() + RECIPE_TIMEOUT)
    check = clients.new()
    value = check.Counter(path).value
    inc, amb = state["increments"], state["ambiguous"]
    result = {"recipe": "counter", "threads": threads, "increments": inc, "value": value,
              "increments_across_connection_loss": amb,
              "ok": inc > 0 and inc <= value <= inc + amb}
    if rounds is not None:
        result["ok"] = result["ok"] and inc == rounds * threads
    return verdict(result, errors, stuck)


# --- election ---------------------------------------------------------------------------------------------------

def election_recipe(clients, base, threads):
    """Contenders run kazoo's Election; each leads for a moment and then leaves, so the next is elected. One
    leader at a time, every contender leads once, and contenders() names the leader first."""
    path = base + "/election"
    state = {"leader": None, "overlaps": 0, "led": [], "wrong_first": 0, "joined": 0}
    mu = threading.Lock()
    # The first leader stays until every contender is in the election, so that each later leader is elected
    # because the one before it left.
    everyone_in = threading.Event()

    def contender(i):
        c = clients.new()
        ident = "contender-%d" % i
        e = c.Election(path, ident)

        def lead():
            with mu:
                if state["leader"] is not None:
                    state["overlaps"] += 1
                state["leader"] = ident
            cs = e.contenders()
            with mu:
                if not cs or cs[0] != ident:
                    state["wrong_first"] += 1
            everyone_in.wait(RECIPE_TIMEOUT)
            time.sleep(0.05)  # hold the leadership a moment, so that an overlap would have time to show
            with mu:
                state["leader"] = None
                state["led"].append(ident)

        t = threading.Thread(target=e.run, args=(lead,), daemon=True)
        t.start()
        deadline = time.monotonic() + RECIPE_TIMEOUT
        while ident not in e.contenders():
            if time.monotonic() > deadline:
                raise RuntimeError("%s did not join the election within %ss" % (ident, RECIPE_TIMEOUT))
            time.sleep(0.01)
        with mu:
            state["joined"] += 1
            if state["joined"] == threads:
                everyone_in.set()
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            e.cancel()
            raise RuntimeError("%s never led within %ss" % (ident, RECIPE_TIMEOUT))

    errors, stuck = run_threads([lambda i=i: contender(i) for i in range(threads)], RECIPE_TIMEOUT + 5)
    led = state["led"]
    result = {"recipe": "election", "threads": threads, "leaders_in_order": led,
              "overlaps": state["overlaps"], "leader_not_first_contender": state["wrong_first"],
              "ok": state["overlaps"] == 0 and state["wrong_first"] == 0 and sorted(led) == sorted(
                  "contender-%d" % i for i in range(threads))}
    return verdict(result, errors, stuck)


# --- queues -----------------------------------------------------------------------------------------------------

def queue_recipe(clients, base, threads, items=40):
    """Producers put items into a kazoo Queue and a LockingQueue; consumers take them concurrently. Every item is
    consumed exactly once from each."""
    results = []
    for kind in ("Queue", "LockingQueue"):
        path = "%s/%s" % (base, kind.lower())
        consumed = []
        mu = threading.Lock()
        produced = [("%s-%d" % (kind, n)).encode() for n in range(items)]
        per_producer = [produced[i::threads] for i in range(threads)]
        done = threading.Event()

        def producer(batch, kind=kind, path=path):
            c = clients.new()
            q = getattr(c, kind)(path)
            for item in batch:
                q.put(item)

        def consumer(kind=kind, path=path, consumed=consumed, mu=mu, done=done):
            c = clients.new()
            q = getattr(c, kind)(path)
            deadline = time.monotonic() + RECIPE_TIMEOUT
            while not done.is_set() and time.monotonic() < deadline:
                if kind == "LockingQueue":
                    item = q.get(timeout=0.5)
                    if item is None:
                        continue
                    with mu:
                        consumed.append(item)
                    q.consume()
                else:
                    item = q.get()
                    if item is None:
                        time.sleep(0.05)
                        continue
                    with mu:
                        consumed.append(item)
                with mu:
                    if len(consumed) >= items:
                        done.set()

        fns = [lambda b=b, p=producer: p(b) for b in per_producer] + [consumer] * threads
        errors, stuck = run_threads(fns, RECIPE_TIMEOUT + 5)
        dupes = len(consumed) - len(set(consumed))
        missing = len(set(produced) - set(consumed))
        results.append(verdict({"recipe": "queue", "queue": kind, "threads": threads, "put": items,
                                "consumed": len(consumed), "duplicates": dupes, "missing": missing,
                                "ok": dupes == 0 and missing == 0 and len(consumed) == items},
                               errors, stuck))
    return results


# --- barriers ---------------------------------------------------------------------------------------------------

def barrier_recipe(clients, base, threads):
    """Barrier: waiters block until the barrier is removed. DoubleBarrier: members pass enter() only once all
    have entered, and leave() only once all have left."""
    results = []

    # Barrier.
    path = base + "/barrier"
    owner = clients.new()
    owner.Barrier(path).create()
    state = {"lifted": False, "early": 0, "passed": 0, "timed_out": 0}
    mu = threading.Lock()
    waiting = threading.Semaphore(0)

    def waiter():
        c = clients.new()
        b = c.Barrier(path)
        waiting.release()
        ok = b.wait(timeout=RECIPE_TIMEOUT)
        with mu:
            if not ok:
                state["timed_out"] += 1
            elif not state["lifted"]:
                state["early"] += 1
            else:
                state["passed"] += 1

    ts = [threading.Thread(target=waiter, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    for _ in range(threads):
        waiting.acquire(timeout=RECIPE_TIMEOUT)
    # The waiters are about to watch the barrier; give them a moment in which an early pass would show.
    time.sleep(0.3)
    with mu:
        state["lifted"] = True
    owner.Barrier(path).remove()
    end = time.monotonic() + RECIPE_TIMEOUT
    stuck = []
    for t in ts:
        t.join(max(0.0, end - time.monotonic()))
        if t.is_alive():
            stuck.append(t.name)
    results.append(verdict({"recipe": "barrier", "barrier": "Barrier", "threads": threads,
                            "passed": state["passed"], "passed_early": state["early"],
                            "timed_out": state["timed_out"],
                            "ok": state["passed"] == threads and state["early"] == 0}, [], stuck))

    # DoubleBarrier.
    path = base + "/double-barrier"
    d = {"entering": 0, "entered_early": 0, "leaving": 0, "left_early": 0, "not_participating": 0}

    def member(i):
        c = clients.new()
        b = c.DoubleBarrier(path, threads, "member-%d" % i)
        with mu:
            d["entering"] += 1
        b.enter()
        with mu:
            if not b.participating:
                d["not_participating"] += 1
            if d["entering"] < threads:
                d["entered_early"] += 1
            d["leaving"] += 1
        b.leave()
        with mu:
            if d["leaving"] < threads:
                d["left_early"] += 1

    errors, stuck = run_threads([lambda i=i: member(i) for i in range(threads)], RECIPE_TIMEOUT)
    results.append(verdict({"recipe": "barrier", "barrier": "DoubleBarrier", "threads": threads,
                            "entered_early": d["entered_early"], "left_early": d["left_early"],
                            "not_participating": d["not_participating"],
                            "ok": d["entered_early"] == 0 and d["left_early"] == 0 and d["not_participating"] == 0},
                           errors, stuck))
    return results


# --- party ------------------------------------------------------------------------------------------------------

def party_recipe(clients, base, threads):
    """Members join a kazoo Party; an observer sees exactly them, then none once they left."""
    path = base + "/party"
    observer = clients.new()
    joined = threading.Barrier(threads + 1, timeout=RECIPE_TIMEOUT)
    seen = threading.Barrier(threads + 1, timeout=RECIPE_TIMEOUT)

    def member(i):
        c = clients.new()
        p = c.Party(path, "member-%d" % i)
        p.join()
        joined.wait()
        seen.wait()  # stay until the observer looked
        p.leave()

    ts = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(threads)]
    for t in ts:
        t.start()
    errors = []
    try:
        joined.wait()
        members = sorted(observer.Party(path))
        size = len(observer.Party(path))
    except threading.BrokenBarrierError:
        members, size = [], -1
        errors.append("the members did not all join within %ss" % RECIPE_TIMEOUT)
    try:
        seen.wait()
    except threading.BrokenBarrierError:
        pass
    end = time.monotonic() + RECIPE_TIMEOUT
    stuck = []
    for t in ts:
        t.join(max(0.0, end - time.monotonic()))
        if t.is_alive():
            stuck.append(t.name)
    after = list(observer.Party(path))
    want = sorted("member-%d" % i for i in range(threads))
    return verdict({"recipe": "party", "threads": threads, "members_seen": members, "len": size,
                    "members_after_leaving": after,
                    "ok": members == want and size == threads and after == []}, errors, stuck)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", required=True, help="host:port,host:port,... of the ZooKeeper-protocol servers")
    ap.add_argument("--threads", type=int, default=4, help="clients per recipe, one session each")
    ap.add_argument("--session-timeout", type=float, default=10.0, help="session timeout in seconds")
    ap.add_argument("--loop", type=float, default=0,
                    help="run the lock and counter recipes for this many seconds instead of every recipe once")
    ap.add_argument("--recipes", default="lock,election,counter,queue,barrier,party",
                    help="the recipes to run, comma-separated (without --loop)")
    ap.add_argument("--root", default="/kazoo-recipes", help="the znode under which each run makes its own tree")
    args = ap.parse_args()
    if args.threads < 2:
        ap.error("--threads must be at least 2: the recipes are about contention")
    if args.loop < 0:
        ap.error("--loop must be positive")

    clients = Clients(args.hosts, args.session_timeout)
    base = "%s/%s" % (args.root, uuid.uuid4().hex[:12])
    try:
        admin = clients.new()
        admin.ensure_path(base)
    except Exception as e:
        emit({"recipe": "connect", "ok": False, "errors": ["%s: %r" % (type(e).__name__, e)]})
        sys.stdout.flush()
        os._exit(2)

    results = []

    def record(r):
        for one in (r if isinstance(r, list) else [r]):
            emit(one)
            results.append(one)

    def guarded(name, fn, *a, **kw):
        try:
            record(fn(*a, **kw))
        except Exception as e:  # a recipe that raised failed; the others still run
            record({"recipe": name, "ok": False, "errors": ["%s: %r" % (type(e).__name__, e)]})

    if args.loop:
        until = time.monotonic() + args.loop
        emit({"event": "looping", "seconds": args.loop})
        # Lock and counter at once, each with its own clients: a failover in the middle hits both.
        out = {}
        ts = [threading.Thread(target=lambda: out.__setitem__("lock", lock_recipe(
                  clients, base, args.threads, until=until)), daemon=True),
              threading.Thread(target=lambda: out.__setitem__("counter", counter_recipe(
                  clients, base, args.threads, until=until)), daemon=True)]
        for t in ts:
            t.start()
        # A progress line a second while the recipes run (they may run on past --loop to finish their last op).
        end = time.monotonic() + args.loop + 2 * RECIPE_TIMEOUT
        while True:
            alive = [t for t in ts if t.is_alive()]
            if not alive or time.monotonic() >= end:
                break
            alive[0].join(1.0)
            emit({"event": "progress", "lock": progress["lock"], "counter": progress["counter"]})
        for name in ("lock", "counter"):
            record(out.get(name, {"recipe": name, "ok": False, "errors": ["did not finish"]}))
        lost = sum(c.lost for c in clients.all)
        record({"recipe": "sessions", "clients": len(clients.all),
                "connection_losses": sum(c.suspensions for c in clients.all), "sessions_lost": lost,
                "ok": lost == 0})
    else:
        table = {"lock": lambda: lock_recipe(clients, base, args.threads, rounds=5),
                 "election": lambda: election_recipe(clients, base, args.threads),
                 "counter": lambda: counter_recipe(clients, base, args.threads, rounds=25),
                 "queue": lambda: queue_recipe(clients, base, args.threads),
                 "barrier": lambda: barrier_recipe(clients, base, args.threads),
                 "party": lambda: party_recipe(clients, base, args.threads)}
        for name in args.recipes.split(","):
            name = name.strip()
            if name not in table:
                ap.error("unknown recipe %r: use some of %s" % (name, ",".join(table)))
            guarded(name, table[name])

    try:
        admin.delete(base, recursive=True)
    except Exception:  # best effort: each run has its own tree
        pass
    clients.close()
    failed = [r["recipe"] for r in results if not r.get("ok")]
    sys.stdout.flush()
    # os._exit: a thread stuck in a recipe (already reported) must not keep the process alive.
    os._exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()

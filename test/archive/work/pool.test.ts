/**
 * The work pools' threads (archive/work/pool.ts) start on the first task
 * and end once idle for `idleMs`, so that an idle daemon holds none of
 * them (each costs some 50 MiB); a task after that starts a new thread.
 */
import t from 'tap';
import { WorkPool } from '../../../archive/work/pool.js';

/** Waits (a turn of the event loop at a time, at most `ms`) until `cond` holds; false when it never did. */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  for (const end = performance.now() + ms; !cond();) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

t.test('no thread before the first task; one while busy and just after; none once idle for idleMs; a new one for the next task', async (t) => {
  const pool = new WorkPool('diff', { idleMs: 300 });
  t.teardown(() => pool.close());
  t.equal(pool.threads, 0, 'nothing started with the pool');
  const first = await pool.run('diff', { a: ['one', 'two'], b: ['one', 'three'] }, 10_000);
  t.ok(first, 'the task ran');
  t.equal(pool.threads, 1, 'its thread stays after the task');
  t.ok(await until(() => pool.threads === 0, 10_000), 'the idle thread ended');
  const again = await pool.run('diff', { a: ['one', 'two'], b: ['one', 'three'] }, 10_000);
  t.same(again, first, 'the next task has the same result, in a new thread');
  t.equal(pool.threads, 1);
});

t.test('a thread busy with tasks one after another does not end in between', async (t) => {
  const pool = new WorkPool('diff', { idleMs: 300 });
  t.teardown(() => pool.close());
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < 1_000) {
    await pool.run('diff', { a: ['x'], b: ['y'] }, 10_000);
    n++;
    t.equal(pool.threads, 1);
  }
  t.ok(n > 1, `${n} tasks in one thread`);
});

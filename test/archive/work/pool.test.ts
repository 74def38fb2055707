/**
 * The work pools' threads (archive/work/pool.ts) start on the first task
 * and end once idle for `idleMs`, so that an idle daemon holds none of
 * them (each costs some 50 MiB); a task after that starts a new thread.
 */
import t from 'tap';
import { WorkPool } from '../../../archive/work/pool.js';
import { until } from '../../helpers/until.js';

t.test('no thread before the first task; one while busy and just after; none once idle for idleMs; a new one for the next task', async (t) => {
  const pool = new WorkPool('diff', { idleMs: 300 });
  t.teardown(() => pool.close());
  t.equal(pool.threads, 0, 'nothing started with the pool');
  const first = await pool.run('diff', { a: ['one', 'two'], b: ['one', 'three'] }, 10_000);
  t.ok(first, 'the task ran');
  t.equal(pool.threads, 1, 'its thread stays after the task');
  await until(() => pool.threads === 0, 10_000, 'the idle thread ends');
  t.equal(pool.threads, 0, 'the idle thread ended');
  const again = await pool.run('diff', { a: ['one', 'two'], b: ['one', 'three'] }, 10_000);
  t.same(again, first, 'the next task has the same result, in a new thread');
  t.equal(pool.threads, 1);
});

t.test('tasks one after another run in the one thread: it does not end between them', async (t) => {
  const pool = new WorkPool('diff', { idleMs: 300 });
  t.teardown(() => pool.close());
  for (let i = 0; i < 5; i++) {
    t.ok(await pool.run('diff', { a: ['x'], b: [String(i)] }, 10_000), `task ${i}`);
    t.equal(pool.threads, 1, 'one thread, started at the first task');
  }
});

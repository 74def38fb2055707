/**
 * The one check of an operator's error (shared/operator-error.ts, said by
 * shared/cli-error.ts): an OperatorError is its one line and its exit
 * status, never a stack; any other error is a bug, one line naming what was
 * being done, exit 1, and its stack with MEMENTO_DEBUG=1. In this process:
 * process.exit and stderr are stood in for while each call runs.
 */
import t from 'tap';
import { exitWithErrorLine } from '#shared/cli-error.js';
import { ConfigError } from '#shared/config.js';
import { inContext, OperatorError } from '#shared/operator-error.js';
import { UriError } from '#shared/uri.js';

/** What exitWithErrorLine writes on stderr and the status it exits with, with `debug` as MEMENTO_DEBUG. */
function said(err: unknown, context: string, debug = '1'): { stderr: string; status: number } {
  let stderr = '';
  const { exit } = process;
  const write = process.stderr.write;
  const before = process.env.MEMENTO_DEBUG;
  process.env.MEMENTO_DEBUG = debug;
  process.stderr.write = ((chunk: string) => {
    stderr += chunk;
    return true;
  }) as typeof process.stderr.write;
  process.exit = ((status: number) => {
    throw { status };
  }) as typeof process.exit;
  try {
    exitWithErrorLine('memento-archive', context, err);
  } catch (thrown) {
    return { stderr, status: (thrown as { status: number }).status };
  } finally {
    process.exit = exit;
    process.stderr.write = write;
    if (before === undefined) delete process.env.MEMENTO_DEBUG;
    else process.env.MEMENTO_DEBUG = before;
  }
  throw new Error('exitWithErrorLine did not exit');
}

t.test('an OperatorError: one line, its exit status, no stack even with MEMENTO_DEBUG=1', async (t) => {
  t.same(said(new OperatorError('the data folder is held'), 'reindex'), { stderr: 'memento-archive: reindex: the data folder is held\n', status: 1 });
  t.same(said(new ConfigError('conf/archive.yaml:3: listen: not host:port'), 'serve'), {
    stderr: 'memento-archive: conf/archive.yaml:3: listen: not host:port\n',
    status: 2,
  });
  t.same(said(new OperatorError('a\nb', { status: 3, whole: true }), 'x'), { stderr: 'memento-archive: a b\n', status: 3 });
});

t.test('any other error: one line naming the command, exit 1, and the stack with MEMENTO_DEBUG=1 only', async (t) => {
  const bug = new TypeError('x is undefined');
  const r = said(bug, 'verify');
  t.equal(r.status, 1);
  t.equal(r.stderr, `memento-archive: verify: x is undefined\n${bug.stack}\n`);
  t.match(r.stderr, /\n\s+at /, 'a stack trace');
  t.same(said(bug, 'verify', ''), { stderr: 'memento-archive: verify: x is undefined\n', status: 1 });
});

t.test('inContext: an operator error framed where it happened; a bug left as it is', async (t) => {
  const busy = new OperatorError('a daemon is running on /srv/a');
  const framed = inContext(busy, { before: 'migrate: ', after: '; stop it before migrate' }) as OperatorError;
  t.ok(framed instanceof OperatorError);
  t.equal(framed.message, 'migrate: a daemon is running on /srv/a; stop it before migrate');
  t.equal(framed.whole, true);
  t.equal(framed.status, 1);
  t.equal(framed.cause, busy);
  t.equal((inContext(new UriError('bad'), { status: 2 }) as OperatorError).status, 2);
  const bug = new RangeError('oops');
  t.equal(inContext(bug, { after: '; x' }), bug);
  t.equal(inContext(bug, { otherwise: () => undefined }), bug, 'otherwise without a line: as it is');
  const fsError = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
  const said2 = inContext(fsError, { before: 'b: ', otherwise: (e) => (e.code ? `x: ${e.message}` : undefined) }) as OperatorError;
  t.equal(said2.message, 'x: ENOENT: no such file', 'an expected error of another kind: its own line, not framed');
  t.equal(said2.whole, true);
});

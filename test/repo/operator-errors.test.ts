/**
 * The commands keep no list of their own of an operator's errors: in
 * archive/cli.ts and archive/commands/, `instanceof` names only the base
 * class (shared/operator-error.ts `OperatorError`), whose one check is
 * the command line's top-level handler (shared/cli-error.ts). The few
 * exceptions below are control flow, not reporting, each with its reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { repo } from '../helpers/daemons.js';

/** `file: class` checks that choose what to do next rather than what to say. */
const CONTROL_FLOW: Record<string, string> = {
  'archive/commands/import.ts: DataDirBusyError': 'a folder the daemon holds is not an error for import: it PUTs the captures to the daemon',
  'archive/commands/import.ts: WarcDamage': 'a damaged WARC file ends that file only; the next one is read',
  'archive/commands/serve.ts: DataDirBusyError': 'only a busy folder gets the advice that a second daemon cannot share it',
};

const files = ['archive/cli.ts', ...readdirSync(path.join(repo, 'archive/commands')).map((f) => `archive/commands/${f}`)].filter((f) => f.endsWith('.ts'));

t.test('archive/cli.ts and archive/commands/: instanceof only on OperatorError (or a listed control-flow check)', async (t) => {
  t.ok(files.length > 5, `${files.length} files`);
  const found = new Set<string>();
  for (const f of files) {
    const text = readFileSync(path.join(repo, f), 'utf8');
    for (const m of text.matchAll(/instanceof\s+([A-Za-z_$][\w$]*)/g)) {
      const key = `${f}: ${m[1]}`;
      if (m[1] === 'OperatorError') continue;
      found.add(key);
      t.ok(Object.hasOwn(CONTROL_FLOW, key), `${key}: an error class of its own; make it extend OperatorError and let the top-level handler say it`);
    }
  }
  for (const key of Object.keys(CONTROL_FLOW)) t.ok(found.has(key), `${key}: listed, still there`);
});

/**
 * A C2SP tlog-witness for tests: the real `memento-archive witness` run
 * through its bin on a config written to a temp folder, listening on
 * 127.0.0.1 port 0; its address and verifier key are read from the line
 * it prints. Stopped with SIGTERM by its PID; started again on the same
 * folder, it keeps its key and state.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { parseVerifierKey } from '../../archive/evidence/signed-note.js';
import type { WitnessEndpoint } from '../../archive/evidence/witness-client.js';
import { type Daemon, startDaemon } from './daemons.js';

/** A running witness. */
export interface LocalWitness {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** its verifier key as it printed it (`<name>+<key id>+<base64>`, type 0x04) */
  readonly vkey: string;
  /** what a log's config lists: name, URL and key */
  readonly endpoint: WitnessEndpoint;
  /** its folder: `witness.yaml`, `state/` (with the key file) */
  readonly dir: string;
  readonly configFile: string;
  readonly stateDir: string;
  readonly daemon: Daemon;
  /** SIGTERM to its PID; resolves with its exit code once it has exited */
  stop(): Promise<number | null>;
}

/** What the witness accepts and where it keeps its files. */
export interface WitnessOptions {
  /** the logs it witnesses: origin and Ed25519 vkey text */
  readonly logs: readonly { origin: string; key: string }[];
  /** its key name (default `witness.test/w1`) */
  readonly name?: string;
  /** an existing folder of a witness started before (its key and state are kept); default a new temp folder */
  readonly dir?: string;
  /** `--quiet` */
  readonly quiet?: boolean;
}

/** Writes the config and starts `memento-archive witness` on it. Stop it at the end of the test. */
export async function startWitness(opts: WitnessOptions): Promise<LocalWitness> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'witness-'));
  const configFile = path.join(dir, 'witness.yaml');
  const name = opts.name ?? 'witness.test/w1';
  writeFileSync(configFile, stringify({ listen: '127.0.0.1:0', name, state_dir: 'state', logs: opts.logs.map((l) => ({ origin: l.origin, key: l.key })) }));
  const daemon = await startDaemon('memento-archive.js', ['witness', '--config', configFile, ...(opts.quiet ? ['--quiet'] : [])]);
  const m = / vkey (\S+)/.exec(daemon.output());
  if (!m) throw new Error(`the witness printed no vkey:\n${daemon.output()}`);
  const exited = new Promise<number | null>((resolve) => {
    if (daemon.proc.exitCode !== null) resolve(daemon.proc.exitCode);
    else daemon.proc.once('exit', (code) => resolve(code));
  });
  return {
    url: daemon.url,
    vkey: m[1],
    endpoint: { name, url: daemon.url, key: parseVerifierKey(m[1]) },
    dir,
    configFile,
    stateDir: path.join(dir, 'state'),
    daemon,
    async stop() {
      await daemon.stop();
      return exited;
    },
  };
}

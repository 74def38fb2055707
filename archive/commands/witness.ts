/**
 * `memento-archive witness --config F [--quiet]`: a C2SP tlog-witness
 * server, so that one organisation's archive can witness another's log.
 * Takes its state folder's lock, loads (or makes) its key, listens,
 * prints one line with its address and its verifier key (what a log
 * operator pastes into `witnesses:`), logs a JSON line per request unless
 * quiet, and on SIGTERM/SIGINT finishes the requests in flight and exits.
 */
import { mkdirSync } from 'node:fs';
import { jsonLinesLogger } from '#shared/log.js';
import { inContext } from '#shared/operator-error.js';
import { formatHostPort, originOf } from '#shared/net.js';
import { noteSignerOf, formatVerifierKey } from '../evidence/signed-note.js';
import { openOwnerOnlyKey } from '../evidence/signing-key.js';
import type { WitnessConfig } from '../evidence/witness-config.js';
import { createWitnessServer } from '../evidence/witness-server.js';
import { WitnessService } from '../evidence/witness-service.js';
import { WitnessState } from '../evidence/witness-state.js';
import { DataDirLock } from '../store/lock.js';
import { fail } from './terminal.js';

/** How long SIGTERM waits for requests in flight before closing their connections, ms. */
const STOP_GRACE_MS = 10_000;

/**
 * Runs the witness until SIGTERM/SIGINT (exit 0). A state folder another
 * witness holds, a key file others may read or that holds no Ed25519
 * key, or an address in use is one line on stderr and exit status 1.
 */
export async function runWitness(config: WitnessConfig, quiet: boolean): Promise<void> {
  const { logger: log, end: endLogging } = jsonLinesLogger(1);
  let lock: DataDirLock;
  try {
    mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
    lock = await DataDirLock.acquire(config.stateDir, 'witness');
  } catch (err) {
    throw inContext(err, { after: '; two witnesses cannot share a state folder', otherwise: (e) => `${config.stateDir}: ${e.message}` });
  }
  let service: WitnessService;
  try {
    service = new WitnessService(noteSignerOf(config.name, openOwnerOnlyKey(config.keyFile)), config.logs, new WitnessState(config.stateDir));
  } catch (err) {
    await lock.release();
    throw inContext(err, {});
  }
  const server = createWitnessServer(service, quiet ? log.child({}, { level: 'warn' }) : log);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.listen.port, config.listen.host, () => resolve());
    });
  } catch (err) {
    await lock.release();
    fail(`cannot listen on ${formatHostPort(config.listen.host, config.listen.port)}: ${(err as Error).message}`, 1);
  }
  const address = server.address() as { address: string; port: number };
  const url = originOf('http', { host: address.address, port: address.port });
  const vkey = formatVerifierKey(service.verifierKey);
  process.stdout.write(`memento-archive witness listening on ${url} vkey ${vkey}\n`);
  log.info({ url, vkey, logs: [...config.logs.keys()], state_dir: config.stateDir }, 'witness started');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: no new connections; requests in flight finish');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = setTimeout(() => server.closeAllConnections(), STOP_GRACE_MS);
    await closed;
    clearTimeout(grace);
    await lock.release();
    log.info('stopped');
    await endLogging();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

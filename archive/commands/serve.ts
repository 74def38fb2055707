/**
 * `memento-archive [serve] [--config FILE] [--quiet]`: the archive daemon.
 * Opens the store (the data folder's lock, crash recovery), listens,
 * prints one line with the address, logs one JSON line per request
 * (shared/log.ts, the proxy's format) unless quiet, reads the config again
 * on SIGHUP (systemd's reload) and stops cleanly on SIGTERM/SIGINT.
 */
import { jsonLinesLogger } from '#shared/log.js';
import { formatHostPort } from '#shared/net.js';
import { inContext } from '#shared/operator-error.js';
import type { VisibleIndex } from '../read/visible-index.js';
import { type ArchiveConfig, loadArchiveConfig } from '../config.js';
import { buildArchiveServer } from '../server.js';
import { DataDirBusyError } from '../store/lock.js';
import { ArchiveStore } from '../store/store.js';
import { fail } from './terminal.js';

/**
 * Runs the daemon until SIGTERM/SIGINT, which ends the process (exit 0)
 * after a last log line. A data folder held by another process, an index
 * a purge left unfinished, a PostgreSQL index that cannot be reached, or
 * an address in use is one line on stderr and
 * exit status 1.
 *
 * @param configFile the file `config` was read from, read again on SIGHUP
 * @param quiet no log line per request (recovery lines are logged anyway)
 */
export async function serve(config: ArchiveConfig, configFile: string, quiet: boolean): Promise<void> {
  const { logger: log, end: endLogging } = jsonLinesLogger(1);
  let store: ArchiveStore;
  try {
    // Recovery lines are logged even with --quiet: they say what happened to the data.
    store = await ArchiveStore.open(config, { log: (line) => log.info(line) });
  } catch (err) {
    // Only a busy folder has advice: another process holds it (an unfinished purge, a stale or unreachable index say what to do).
    const busy = err instanceof DataDirBusyError ? '; a second daemon cannot share its data folder' : '';
    throw inContext(err, { after: busy, otherwise: (e) => (e.code && e.syscall ? `${config.dataDir}: ${e.message}` : undefined) });
  }
  let app: Awaited<ReturnType<typeof buildArchiveServer>>;
  try {
    app = await buildArchiveServer(config, store, { log, quiet });
  } catch (err) {
    await store.close();
    throw inContext(err, {});
  }
  let address: string;
  try {
    address = await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    await store.close();
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE' || e.code === 'EADDRNOTAVAIL' || e.code === 'EACCES')
      fail(`cannot listen on ${formatHostPort(config.listen.host, config.listen.port)}: ${e.message}`, 1);
    throw err;
  }
  process.stdout.write(`memento-archive listening on ${address}\n`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: no new connections; requests and captures in flight finish');
    await app.close();
    await store.close();
    log.info('stopped');
    await endLogging();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void reread(configFile, config, log, app.visible));
}

/**
 * SIGHUP (`systemctl reload`): reads the config file again and says what
 * it found: a mistake (`file:line: reason`; everything running stays), or
 * the access rules now in force (`access`: how many; they apply from the
 * next request on, once the stored keys they name in an encoded-slash
 * spelling are looked up: archive/read/visible-index.ts `replaceRules`) and which other
 * settings differ from the running ones (`changed`: those take effect at
 * the next start). Never stops the daemon.
 */
async function reread(configFile: string, running: ArchiveConfig, log: ReturnType<typeof jsonLinesLogger>['logger'], visible: VisibleIndex): Promise<void> {
  try {
    const fresh = loadArchiveConfig(configFile);
    await visible.replaceRules(fresh.access);
    const changed = (Object.keys(running) as (keyof ArchiveConfig)[]).filter((k) => k !== 'access' && JSON.stringify(running[k]) !== JSON.stringify(fresh[k]));
    log.info(
      { file: configFile, changed, access: fresh.access.length },
      changed.length
        ? 'SIGHUP: config read again; access rules in force; these settings take effect at the next start'
        : 'SIGHUP: config read again; access rules in force; nothing else changed',
    );
  } catch (err) {
    log.error({ file: configFile, error: (err as Error).message }, 'SIGHUP: config not read again; the running one stays');
  }
}

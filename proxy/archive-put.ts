/**
 * The proxy's side of the capture PUT, as both its senders make it (the
 * live PUT, proxy/capture/upload.ts, and the spool's re-send,
 * proxy/spool/queue.ts): where a vhost's capture goes ({@link putTargetOf})
 * and on which connections ({@link archiveAgent}). The request itself and
 * the reading of the archive's answer are the one capture-PUT client of
 * shared/capture-put.ts (`openCapturePut`, `readCaptureAnswer`), which
 * import uses too. Of its answers, a 409 (`isConflict`) is logged and
 * counted, then dropped (never re-sent, not kept in `rejected/`), and a
 * refusal no re-send can change (`isPermanentRefusal`) goes to
 * `rejected/`; after either the archive counts as up, so the captures
 * behind it are not held back. The design: docs/architecture.md.
 */

import http from 'node:http';
import type { PutTarget } from '#shared/capture-put.js';
import type { Vhost } from './config/vhost-file.js';

/** Where a vhost's capture of `uriR` goes: `ArchiveHost`, `ArchivePort`, and `ArchivePath` + URI-R as the path. */
export function putTargetOf(vhost: Vhost, uriR: string): PutTarget {
  return { host: vhost.archiveHost, port: vhost.archivePort, path: vhost.archivePath + uriR };
}

/**
 * The connections to the archives: HTTP/1.1 keep-alive (RFC 9112 §9.3),
 * at most `maxSockets` per archive (`host:port`; `archive_connections`);
 * a PUT that finds them all busy waits for one. The most recently used
 * idle connection is taken first (`lifo`), so that the others time out;
 * an idle connection is closed after 60 s, or a second before the
 * archive's own keep-alive timeout when it announces one (`Keep-Alive:
 * timeout=5`), so that a PUT never races the archive closing it.
 */
export function archiveAgent(maxSockets = 64): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo', timeout: 60_000 });
}

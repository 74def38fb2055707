/**
 * The evidence log in the transparency-log standard formats over HTTP
 * (docs/evidence.md): `GET /<id>/tlog/checkpoint` (the newest published
 * checkpoint, C2SP tlog-checkpoint), `/<id>/tlog/checkpoint.tsr` (its RFC
 * 3161 time-stamp response), `/<id>/tlog/tile/<L>/<N>[.p/<W>]` and
 * `/<id>/tlog/tile/entries/<N>[.p/<W>]` (C2SP tlog-tiles), and
 * `/<id>/receipt/<ts>/<URI-R>` (a capture's receipt, C2SP tlog-proof).
 * And the start of the machinery behind them: the anchors, the
 * checkpoint publisher, the logs' origins.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import { httpError } from '#shared/http-error.js';
import type { ArchiveConfig } from '../config.js';
import { logVerifierKey, timestampKeyName } from '../evidence/checkpoint.js';
import { formatVerifierKey } from '../evidence/signed-note.js';
import { LogAnchors } from '../evidence/checkpoint-anchor.js';
import { CheckpointPublisher, type TlogClients } from '../evidence/checkpoint-publisher.js';
import type { CheckpointRow, LogStore } from '../evidence/log.js';
import { receiptOf } from '../evidence/receipt.js';
import type { SigningKey } from '../evidence/signing-key.js';
import { parseTilePath, readBundle, readTile, TilePathError, treeHolds } from '../evidence/tiles.js';
import { logOrigin } from '../evidence/tlog-config.js';
import type { HeadSigning } from '../evidence/tree-heads.js';
import { isLocal } from '../spans.js';
import { archiveRead, localArchive, readRoute } from './context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The checkpoint publisher, the anchors and the logs' origins (archive/http/tlog.ts). */
    tlog: Tlog;
  }
}

/** What the tlog routes and `/healthz` use. */
export interface Tlog {
  publisher: CheckpointPublisher;
  anchors: LogAnchors;
  /** The origin of an archive's log. */
  origin(archive: string): string;
  /** What the tree head signer needs: origins, and the anchor check. */
  signing: HeadSigning;
  /** Checks each local archive's log against its anchor. @throws LogAnchorError when one was cut back or rewritten below its last published checkpoint */
  checkAnchors(): Promise<void>;
}

/** Caching of the checkpoint (tlog-tiles: "not beyond a few seconds"). */
const CHECKPOINT_CACHE = 'public, max-age=2';
/** Caching of a tile: its hashes never change. */
const TILE_CACHE = 'public, max-age=31536000, immutable';
/** Caching of an entry bundle: an entry purged or hidden later becomes an empty slot. */
const BUNDLE_CACHE = 'public, max-age=3600';

/**
 * Makes the tlog machinery of a daemon: the logs' origins (from
 * `base_url`, else the address it listens on), the anchors beside the
 * key file, and the checkpoint publisher (not started); {@link Tlog.checkAnchors}
 * checks every local archive's log against its anchor before it starts.
 */
export async function makeTlog(app: FastifyInstance, config: ArchiveConfig, log: LogStore, key: SigningKey, clients: TlogClients): Promise<Tlog> {
  const archives = config.archives.filter(isLocal).map((a) => a.id);
  const bound = () => (app.server.listening ? (app.server.address() as AddressInfo).port : undefined);
  const origin = (archive: string) => logOrigin(config, archive, bound());
  const anchors = new LogAnchors(config.signingKeyFile, key, log);
  const publisher = new CheckpointPublisher({
    log,
    key,
    anchors,
    archives,
    origin,
    witnesses: config.witnesses,
    quorum: config.witnessQuorum,
    tsaUrl: config.tsaUrl,
    clients,
    onProblem: (archive, line) => app.log.warn({ archive, problem: line }, 'evidence log: checkpoint not published'),
  });
  // Each log's name and key, as a witness's operator lists them (its `logs:`), once the port is known.
  app.addHook('onListen', (done) => {
    for (const a of archives) app.log.info({ archive: a, origin: origin(a), verifier_key: formatVerifierKey(logVerifierKey(origin(a), key)) }, 'evidence log');
    done();
  });
  const checkAnchors = async () => {
    for (const a of archives) await anchors.check(a);
  };
  return { publisher, anchors, origin, signing: { origin, check: (a, size) => anchors.check(a, size) }, checkAnchors };
}

/** The newest published checkpoint of `archive`. @throws HttpError 404 when none is */
async function published(app: FastifyInstance, archive: string): Promise<CheckpointRow> {
  const c = await app.store.index.log.checkpoint(archive);
  if (!c) throw httpError(404, `no checkpoint of the log of archive "${archive}" is published yet`);
  return c;
}

function sendBytes(reply: FastifyReply, type: string, cache: string, body: Buffer | string): FastifyReply {
  return reply.header('cache-control', cache).header('access-control-allow-origin', '*').header('x-content-type-options', 'nosniff').type(type).send(body);
}

/** The tlog plugin. */
export async function tlogRoutes(app: FastifyInstance): Promise<void> {
  readRoute(
    app,
    '/:archive/tlog/checkpoint',
    async (req, reply) => {
      const c = await published(app, localArchive(app.config, req.params.archive).id);
      return sendBytes(reply, 'text/plain; charset=utf-8', CHECKPOINT_CACHE, c.note);
    },
    { resource: 'log' },
  );

  readRoute(
    app,
    '/:archive/tlog/checkpoint.tsr',
    async (req, reply) => {
      const archive = localArchive(app.config, req.params.archive).id;
      const c = await published(app, archive);
      if (!c.tsr) throw httpError(404, `the newest checkpoint of the log of archive "${archive}" has no time-stamp token (tsa_url is not set)`);
      return sendBytes(reply, 'application/timestamp-reply', CHECKPOINT_CACHE, c.tsr);
    },
    { resource: 'log' },
  );

  readRoute(
    app,
    '/:archive/tlog/tile/*',
    async (req, reply) => {
      const archive = localArchive(app.config, req.params.archive).id;
      let a;
      try {
        a = parseTilePath(req.params['*']);
      } catch (err) {
        if (err instanceof TilePathError) throw httpError(400, err.message);
        throw err;
      }
      const log = app.store.index.log;
      const size = await log.size(archive);
      if (!treeHolds(size, a)) throw httpError(404, `the log of archive "${archive}" (${size} entries) holds no tile ${req.params['*']}`);
      if (a.level !== undefined) return sendBytes(reply, 'application/octet-stream', TILE_CACHE, await readTile(log, archive, { ...a, level: a.level }));
      const bundle = await readBundle(log, archive, a, (urlkey, datetime) => app.visible.shows(urlkey, datetime));
      return sendBytes(reply, 'application/octet-stream', BUNDLE_CACHE, bundle);
    },
    { resource: 'log' },
  );

  readRoute(
    app,
    '/:archive/receipt/:ts/*',
    async (req, reply) => {
      const read = archiveRead(app.config, req);
      const archive = read.archiveId;
      const ts = req.params.ts;
      if (!/^\d{14}$/.test(ts))
        throw httpError(400, `a receipt address is /<archive>/receipt/<14-digit timestamp>/<URL>; ${JSON.stringify(ts.slice(0, 40))} is not 14 digits`);
      // The memento as /record and /proof find it: 404 when not stored at ts, excluded or embargoed; 451 when blocked.
      const row = await app.reader.exact(read, ts);
      const log = app.store.index.log;
      const leaf = await log.leafOf(archive, row.urlkey, row.datetime);
      if (!leaf || leaf.leaf_text === null) throw httpError(404, `the memento of ${req.uriR} at ${ts} has no entry in the evidence log`);
      const c = await log.checkpoint(archive);
      if (!c || c.tree_size <= leaf.leaf_index) {
        throw httpError(404, `the entry of the memento of ${req.uriR} at ${ts} is not in a published checkpoint yet; ask again in a few seconds`, {
          headers: { 'retry-after': '2' },
        });
      }
      const body = (await receiptOf(log, leaf, c, timestampKeyName(app.config.tsaUrl)))!;
      reply.header('content-disposition', `inline; filename="${archive}-${toTimestamp14(row.datetime)}.tlog-proof"`);
      return sendBytes(reply, 'text/plain; charset=utf-8', 'no-cache', body);
    },
    { uriR: true, resource: 'log' },
  );
}

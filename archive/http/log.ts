/**
 * The evidence log over HTTP (docs/evidence.md): `GET /<id>/log` (the
 * newest signed tree head, or `?tree_size=N` a kept one),
 * `GET /<id>/log/consistency?first=N&second=M` (RFC 9162 §2.1.4) and
 * `GET /<id>/proof/<ts>/<URI-R>` (the memento's entry and its inclusion
 * proof, RFC 9162 §2.1.3, in the tree of a signed head). JSON, never
 * cached by clients without asking again (`Cache-Control: no-cache`);
 * a bad query is 400 with a one-line reason.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { httpError } from '#shared/http-error.js';
import { missingEntry } from '../evidence/capture-check.js';
import { parseCaptureLeaf } from '../evidence/leaf.js';
import { consistencyOf, inclusionOf } from '../evidence/log.js';
import { headJson, type TreeHeadSigner } from '../evidence/tree-heads.js';
import { archiveRead, localArchive, readRoute } from './context.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The signer of the evidence logs' tree heads (archive/evidence/tree-heads.ts). */
    treeHeads: TreeHeadSigner;
  }
}

/** Sends `body` as the log's JSON. */
function sendJson(reply: FastifyReply, body: unknown): FastifyReply {
  return reply
    .header('cache-control', 'no-cache')
    .header('access-control-allow-origin', '*')
    .type('application/json')
    .send(JSON.stringify(body) + '\n');
}

/** A tree size from the query string: a decimal whole number. @throws HttpError 400 */
function sizeParam(value: unknown, name: string): number {
  if (value === undefined) throw httpError(400, `the query lacks ${name}=<tree size>`);
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' || !/^\d{1,15}$/.test(text))
    throw httpError(400, `${name} is not a tree size (a whole number): ${JSON.stringify(String(text).slice(0, 40))}`);
  return Number(text);
}

/** The evidence log plugin. */
export async function logRoutes(app: FastifyInstance): Promise<void> {
  const key = () => app.treeHeads.key.publicKeyBase64;

  readRoute(
    app,
    '/:archive/log',
    async (req, reply) => {
      const archive = localArchive(app.config, req.params.archive).id;
      const q = req.query as Record<string, unknown>;
      if (q.tree_size !== undefined) {
        const size = sizeParam(q.tree_size, 'tree_size');
        const head = await app.store.index.log.head(archive, size);
        if (!head) throw httpError(404, `no signed tree head of size ${size} in the log of archive "${archive}"`);
        return sendJson(reply, headJson(app.treeHeads.servable(archive, head), key()));
      }
      return sendJson(reply, headJson(await app.treeHeads.newest(archive, 0), key()));
    },
    { resource: 'log' },
  );

  readRoute(
    app,
    '/:archive/log/consistency',
    async (req, reply) => {
      const archive = localArchive(app.config, req.params.archive).id;
      const q = req.query as Record<string, unknown>;
      const first = sizeParam(q.first, 'first');
      const second = sizeParam(q.second, 'second');
      const head = await app.treeHeads.newest(archive, second);
      if (!(first > 0 && first <= second && second <= head.tree_size))
        throw httpError(400, `consistency needs 0 < first <= second <= ${head.tree_size} (the newest signed tree size); got first=${first}, second=${second}`);
      const proof = await consistencyOf(app.store.index.log, archive, first, second);
      return sendJson(reply, { first, second, proof: proof.map((h) => h.toString('base64')) });
    },
    { resource: 'log' },
  );

  readRoute(
    app,
    '/:archive/proof/:ts/*',
    async (req, reply) => {
      const read = archiveRead(app.config, req);
      const archive = read.archiveId;
      const ts = req.params.ts;
      if (!/^\d{14}$/.test(ts))
        throw httpError(400, `a proof address is /<archive>/proof/<14-digit timestamp>/<URL>; ${JSON.stringify(ts.slice(0, 40))} is not 14 digits`);
      // The memento as /record finds it: 404 when not stored at ts, excluded or embargoed; 451 when blocked.
      const row = await app.reader.exact(read, ts);
      const leaf = await app.store.index.log.leafOf(archive, row.urlkey, row.datetime);
      const fields = leaf?.leaf_text ? parseCaptureLeaf(leaf.leaf_text) : undefined;
      if (!leaf || !fields) throw httpError(404, (await missingEntry(app.store.index.log, row)).reason);
      const head = await app.treeHeads.newest(archive, leaf.leaf_index + 1);
      const path = await inclusionOf(app.store.index.log, archive, leaf.leaf_index, head.tree_size);
      return sendJson(reply, {
        leaf: fields,
        leaf_index: leaf.leaf_index,
        tree_size: head.tree_size,
        audit_path: path.map((h) => h.toString('base64')),
        sth: headJson(head, key()),
      });
    },
    { uriR: true, resource: 'log' },
  );
}

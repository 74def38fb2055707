/**
 * The archive's own check of one capture, for the "Verify this capture"
 * page (`/web/verify/<id>/<ts>/<URI-R>`, archive/web/views/verify.eta):
 * the bytes it would serve, against its evidence log and its key
 * (docs/evidence.md "Verify this capture"):
 *
 * 1. the memento's own WARC record is read as stored, streamed, and
 *    hashed; the entry it calls for (leaf.ts `leafOfRecord`: URI-R and
 *    datetime from its WARC header, record id, SHA-256 of its block, how
 *    it came in, a revisit's original) must be the logged entry, byte for
 *    byte;
 * 2. for a revisit, the capture whose body it replays (its index row's
 *    original) must be the one the entry names: its record id, and the
 *    SHA-256 of its payload read now;
 * 3. the entry's leaf hash, with its inclusion path (RFC 9162 §2.1.3.2),
 *    must lead to the root of a signed tree head;
 * 4. that head's Ed25519 signature must verify with the archive's key.
 *
 * It says in plain words what held, what did not, and that this is the
 * archive checking itself; the page offers the independent way (the proof
 * and the record, checked with a key obtained elsewhere).
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { toTimestamp14 } from '#shared/http-date.js';
import type { MementoRow } from '../store/index/memento-row.js';
import { rootFromInclusionPath } from './banner-check.js';
import { type CaptureLeaf, captureLeafText, leafOfRecord, parseCaptureLeaf } from './leaf.js';
import { inclusionOf, type LogStore } from './log.js';
import { leafHash } from './merkle.js';
import { digestRecord } from './record-digest.js';
import { headSignatureOk } from './tree-heads.js';

/** One thing checked: `ok` true (held), false (did not), null (said, not a check). */
export interface CheckStep {
  ok: boolean | null;
  /** What was checked and what was found, in plain words. */
  text: string;
}

/** How a capture came in, for people. */
export interface ViaWords {
  text: string;
  /** Imported from a package that failed its integrity check (`--accept-damaged`). */
  damaged: boolean;
}

/** The result of {@link captureCheck}. */
export interface CaptureCheck {
  /** Every check held. */
  ok: boolean;
  /** `match` (every check held), `mismatch` (one did not: the copy or the log was changed), `unlogged` (no entry, and the log does not show one is missing). */
  verdict: 'match' | 'mismatch' | 'unlogged';
  /** A few words for the page's headline. */
  summary: string;
  /** One line naming the entry, its tree and the record digest (or why there is none). */
  line: string;
  steps: CheckStep[];
  via: ViaWords | null;
  /** SHA-256 (lower-case hex) of the archive's public key, SubjectPublicKeyInfo DER. */
  keyFingerprint: string;
  /** When the check ran, ms since the epoch. */
  at: number;
}

/** `ms` since the epoch as `YYYY-MM-DD hh:mm:ss UTC`. */
function utc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

/** SHA-256 (hex) of a public key's SPKI DER: the fingerprint people compare. */
export function keyFingerprint(publicKeyDer: Buffer): string {
  return createHash('sha256').update(publicKeyDer).digest('hex');
}

/** How an entry's `via` line reads for people; `null` for an entry of the first form (it does not say). */
export function viaWords(via: string | undefined): ViaWords | null {
  if (via === undefined) return null;
  if (via === 'put')
    return {
      text: 'It came in as a capture PUT: what the capture proxy sends for each response it passes to a browser (any client allowed to write to this archive can send one).',
      damaged: false,
    };
  if (via === 'import') return { text: 'It was imported from a WARC file (memento-archive import).', damaged: false };
  const m = /^import wacz (\S+)( damaged)?$/.exec(via);
  if (!m) return { text: `The entry says it came in “${via}”.`, damaged: false };
  const pkg = m[1] === 'none' ? 'a WACZ package without a datapackage.json' : `a WACZ package whose datapackage.json has the SHA-256 ${m[1].slice(7)}`;
  if (m[2])
    return {
      text: `It was imported from ${pkg}, which did NOT pass the import’s integrity check (hashes, signature, proofs) and was imported anyway (--accept-damaged): the package does not vouch for it.`,
      damaged: true,
    };
  return { text: `It was imported from ${pkg}, which passed the import’s integrity check (hashes, signature, proofs).`, damaged: false };
}

/**
 * Why the memento `m` has no entry, in one sentence, as far as the log
 * tells: dated after the log was begun (its first signed tree head), its
 * entry is missing (cut back or deleted); dated before, it may have been
 * indexed before the log was kept, or its entry was removed.
 * @returns the sentence, and whether the missing entry is certainly a fault
 */
export async function missingEntry(log: LogStore, m: Pick<MementoRow, 'archive_id' | 'uri_r' | 'datetime'>): Promise<{ reason: string; fault: boolean }> {
  const what = `the memento of ${m.uri_r} at ${toTimestamp14(m.datetime)} has no entry in the evidence log of archive ${m.archive_id}`;
  const first = await log.firstHead(m.archive_id);
  if (first && m.datetime * 1000 >= first.timestamp)
    return {
      reason: `${what}, though it is dated after the log was begun (${utc(first.timestamp)}): its entry is missing — the log was cut back or the entry deleted; memento-archive verify names what is missing`,
      fault: true,
    };
  const since = first ? `the log was begun (${utc(first.timestamp)})` : 'the log has a signed tree head';
  return {
    reason: `${what}: it is dated before ${since}, so it may have been indexed before the log was kept (memento-archive reindex gives such mementos an entry) — or its entry was removed; memento-archive verify tells which`,
    fault: false,
  };
}

const FIELD_WORDS: [keyof CaptureLeaf, string][] = [
  ['uri', 'the URL'],
  ['datetime', 'the capture time'],
  ['record_id', 'the record id'],
  ['digest', 'the digest of the record’s bytes'],
  ['via', 'how it came in'],
  ['refers_to', 'the capture whose body it repeats'],
  ['payload_digest', 'the digest of the body it repeats'],
];

/** The fields of two entries that differ, in words. */
function differences(a: CaptureLeaf | undefined, b: CaptureLeaf): string {
  if (!a) return 'the logged entry cannot be read';
  const d = FIELD_WORDS.filter(([k]) => a[k] !== b[k]).map(([, w]) => w);
  return d.length ? d.join(', ') : 'its bytes';
}

/** Step 1 (and 2, for a revisit): the record as stored against the logged entry `logged`. */
async function recordSteps(app: FastifyInstance, m: MementoRow, logged: CaptureLeaf | undefined, loggedText: string): Promise<CheckStep[]> {
  const warcs = app.store.warcs;
  const steps: CheckStep[] = [];
  let rec;
  try {
    rec = await digestRecord(warcs, m.warc_file, m.warc_offset, m.warc_length);
  } catch (err) {
    return [{ ok: false, text: `The capture’s WARC record could not be read as stored (${(err as Error).message}): it does not match its log entry.` }];
  }
  const date = Date.parse(rec.field('warc-date') ?? '');
  const rebuilt = leafOfRecord(rec.field('warc-target-uri') ?? '', Number.isNaN(date) ? 0 : Math.floor(date / 1000), rec);
  let text: string | undefined;
  try {
    text = captureLeafText(rebuilt);
  } catch {
    text = undefined;
  }
  const whole = rec.blockRead === rec.blockLength;
  const same = whole && text === loggedText && logged?.uri === m.uri_r && logged?.datetime === toTimestamp14(m.datetime);
  const size = `${rec.blockLength.toLocaleString('en-US')} bytes`;
  steps.push(
    same
      ? {
          ok: true,
          text: `The capture’s WARC record, as stored and served, was read and hashed: its ${size} hash to ${rec.blockDigest}, the digest its log entry holds, and its URL, time and record id are the entry’s.`,
        }
      : {
          ok: false,
          text: whole
            ? `The capture’s WARC record as stored does NOT match its log entry: the record hashes to ${rec.blockDigest}, the entry says ${logged?.digest ?? '(none)'}; what differs: ${differences(logged, rebuilt)}.`
            : `The capture’s WARC record as stored is cut short (${rec.blockRead} of ${size}): it does NOT match its log entry.`,
        },
  );
  if (rec.type === 'revisit') steps.push(await originalStep(app, m, logged));
  return steps;
}

/** Step 2: the capture a revisit replays the body of, against what its entry names. */
async function originalStep(app: FastifyInstance, m: MementoRow, logged: CaptureLeaf | undefined): Promise<CheckStep> {
  const original = m.refers_to === null ? undefined : await app.store.index.byId(m.refers_to);
  if (!original) return { ok: false, text: 'This capture is a revisit (the page was the same as before), but the capture whose body it shows is missing.' };
  const at = `the capture of ${original.uri_r} at ${toTimestamp14(original.datetime)}`;
  if (!logged?.refers_to)
    return {
      ok: null,
      text: `This capture is a revisit: it shows the body of ${at}. Its log entry was written before entries named that capture, so the body shown is not covered by the log; that capture’s own entry covers it.`,
    };
  let rec;
  try {
    rec = await digestRecord(app.store.warcs, original.warc_file, original.warc_offset, original.warc_length);
  } catch (err) {
    return { ok: false, text: `This capture is a revisit of ${at}, whose record could not be read (${(err as Error).message}).` };
  }
  const id = rec.field('warc-record-id');
  if (id === logged.refers_to && rec.payloadDigest === logged.payload_digest)
    return {
      ok: true,
      text: `This capture is a revisit (the page was the same as before): it shows the body of ${at}, whose record ${id} and body digest ${rec.payloadDigest} (read now) are the ones its log entry names.`,
    };
  return {
    ok: false,
    text: `This capture is a revisit, and the body it shows is NOT the one its log entry names: it shows the body of ${at} (record ${id}, body digest ${rec.payloadDigest}); the entry names record ${logged.refers_to} with body digest ${logged.payload_digest}.`,
  };
}

/**
 * The archive's check of the memento `m` (see the module comment): the
 * steps, what held, the key's fingerprint and how the capture came in.
 * Without an entry, one failed (or unknown) step saying why
 * ({@link missingEntry}). A head is signed now when none holds the entry
 * yet (as `/proof` does).
 */
export async function captureCheck(app: FastifyInstance, m: MementoRow): Promise<CaptureCheck> {
  const log = app.store.index.log;
  const at = Date.now();
  const fingerprint = keyFingerprint(app.treeHeads.key.publicKeyDer);
  const leaf = await log.leafOf(m.archive_id, m.urlkey, m.datetime);
  if (!leaf || !leaf.leaf_text) {
    const { reason, fault } = await missingEntry(log, m);
    const line = reason[0].toUpperCase() + reason.slice(1) + '.';
    return {
      ok: false,
      verdict: fault ? 'mismatch' : 'unlogged',
      summary: fault ? 'its log entry is missing' : 'not in the log',
      line,
      steps: [{ ok: fault ? false : null, text: line }],
      via: null,
      keyFingerprint: fingerprint,
      at,
    };
  }
  const fields = parseCaptureLeaf(leaf.leaf_text);
  const steps = await recordSteps(app, m, fields, leaf.leaf_text);
  const head = await app.treeHeads.newest(m.archive_id, leaf.leaf_index + 1);
  const path = await inclusionOf(log, m.archive_id, leaf.leaf_index, head.tree_size);
  const hash = leafHash(leaf.leaf_text);
  const entries = head.tree_size === 1 ? 'entry' : 'entries';
  const tree = `the tree of ${head.tree_size} ${entries} signed ${utc(head.timestamp)}`;
  const included = hash.equals(leaf.leaf_hash) && !!rootFromInclusionPath(hash, leaf.leaf_index, head.tree_size, path)?.equals(head.root_hash);
  steps.push(
    included
      ? {
          ok: true,
          text: `The entry is leaf ${leaf.leaf_index} of the log of archive ${m.archive_id}; its hash and inclusion path lead to the root of ${tree}.`,
        }
      : { ok: false, text: `The entry, leaf ${leaf.leaf_index} of the log of archive ${m.archive_id}, does NOT lead to the root of ${tree}.` },
  );
  const signed = headSignatureOk(head, app.treeHeads.key.publicKeyDer);
  steps.push(
    signed
      ? { ok: true, text: `That tree’s signature (Ed25519) verifies with the archive’s key, whose fingerprint (SHA-256 of the public key) is ${fingerprint}.` }
      : { ok: false, text: `That tree’s signature does NOT verify with the archive’s key (fingerprint ${fingerprint}).` },
  );
  const ok = steps.every((s) => s.ok !== false);
  const what = `leaf ${leaf.leaf_index} of the log of archive ${m.archive_id}, included in ${tree}; record digest ${fields?.digest ?? '(unreadable)'}`;
  const via = viaWords(fields?.via);
  return {
    ok,
    verdict: ok ? 'match' : 'mismatch',
    summary: ok ? (via?.damaged ? 'in the signed log; imported from a damaged package' : 'in the signed log') : 'does not match',
    line: ok ? what[0].toUpperCase() + what.slice(1) : `The archive’s copy does not match ${what}.`,
    steps,
    via,
    keyFingerprint: fingerprint,
    at,
  };
}

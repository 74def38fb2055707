/**
 * Trusted timestamps (RFC 3161, Time-Stamp Protocol) over the evidence
 * log's checkpoints: asking a timestamping authority (TSA) for a token
 * over SHA-256 of some bytes, and checking a token: granted, over those
 * bytes, with the nonce asked for, signed (CMS, RFC 5652) by the
 * certificate it carries, a certificate for timestamping only, and chained
 * to the certificates trusted when some are given. The ASN.1 and CMS work
 * is pkijs's and asn1js's; a token is hostile input, bounded in bytes and
 * in certificates before they see it.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { BoundedPostError, boundedPost } from './bounded-post.js';

/** The most bytes of a TimeStampResp read (a token with its certificate chain is a few KiB). */
export const MAX_TIMESTAMP_BYTES = 64 * 1024;
/** The most certificates a token, or a list of trusted ones, may hold. */
const MAX_CERTIFICATES = 8;
/** How long a TSA may take to answer by default, ms. */
export const TSA_TIMEOUT_MS = 10_000;

const OID_SHA256 = '2.16.840.1.101.3.4.2.1';
const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const OID_TST_INFO = '1.2.840.113549.1.9.16.1.4';
const OID_EXT_KEY_USAGE = '2.5.29.37';
const OID_TIME_STAMPING = '1.3.6.1.5.5.7.3.8';

/** A token or a TSA's answer that does not check out: the one-line reason. */
export class TimestampError extends Error {
  override name = 'TimestampError';
}

/** What a checked token says. */
export interface TimestampInfo {
  /** when the TSA says it saw the imprint (TSTInfo genTime) */
  readonly genTime: Date;
  /** the token's serial number, lower-case hex */
  readonly serial: string;
  /** the TSA's name as the token gives it (`CN=…, O=…`, a DNS name or URI), when it does */
  readonly tsaName?: string;
  /** the subject of the certificate that signed the token */
  readonly signer: string;
  /** the TSA's policy OID */
  readonly policy: string;
}

/** What {@link checkTimestamp} checks besides the token itself. */
export interface CheckTimestampOptions {
  /** certificates (PEM, one or more) the TSA's certificate must chain to; without them the chain is not checked */
  readonly trustedCertsPem?: string | readonly string[];
  /** the nonce of the request, when the token must answer that request */
  readonly nonce?: bigint;
}

/** Options of {@link requestTimestamp}. */
export interface RequestTimestampOptions {
  /** the certificates the answer must chain to (see {@link CheckTimestampOptions}) */
  readonly trustedCertsPem?: string | readonly string[];
  /** the whole exchange, ms (default {@link TSA_TIMEOUT_MS}) */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Asks the TSA at `tsaUrl` for a timestamp token over `data` (RFC 3161
 * §3.4: `POST`, `application/timestamp-query`): a TimeStampReq with the
 * SHA-256 imprint of `data`, a random 64-bit nonce and certReq true.
 * The answer is checked by {@link checkTimestamp} (with that nonce)
 * before it is returned.
 *
 * @returns the DER TimeStampResp, as the TSA sent it
 * @throws TimestampError when the TSA cannot be reached, answers late,
 *   too much, with a status other than 200, or a token that does not check
 */
export async function requestTimestamp(tsaUrl: string, data: Buffer, opts: RequestTimestampOptions = {}): Promise<Buffer> {
  const nonceBytes = randomBytes(8);
  nonceBytes[0] &= 0x7f; // a positive INTEGER
  nonceBytes[0] |= 0x01; // of 8 bytes in DER (no leading zero byte dropped)
  const nonce = BigInt(`0x${nonceBytes.toString('hex')}`);
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: OID_SHA256 }),
      hashedMessage: new asn1js.OctetString({ valueHex: createHash('sha256').update(data).digest() }),
    }),
    nonce: new asn1js.Integer({ valueHex: nonceBytes }),
    certReq: true,
  });
  let answer;
  try {
    answer = await boundedPost(tsaUrl, Buffer.from(req.toSchema().toBER()), {
      contentType: 'application/timestamp-query',
      accept: 'application/timestamp-reply',
      timeoutMs: opts.timeoutMs ?? TSA_TIMEOUT_MS,
      maxBytes: MAX_TIMESTAMP_BYTES,
      signal: opts.signal,
    });
  } catch (err) {
    if (err instanceof BoundedPostError) throw new TimestampError(`TSA ${err.message}`);
    throw err;
  }
  if (answer.status !== 200) throw new TimestampError(`TSA ${tsaUrl}: answered ${answer.status}`);
  await checkTimestamp(answer.body, data, { nonce, trustedCertsPem: opts.trustedCertsPem });
  return answer.body;
}

/** The one DER value of `der` (nothing after it), as pkijs's type `T`. */
function parseDer<T>(der: Buffer | ArrayBuffer, what: string, make: (schema: asn1js.AsnType) => T): T {
  const view = der instanceof ArrayBuffer ? new Uint8Array(der) : new Uint8Array(der.buffer, der.byteOffset, der.byteLength);
  const parsed = asn1js.fromBER(view);
  if (parsed.offset === -1) throw new TimestampError(`${what} is not DER: ${parsed.result.error}`);
  if (parsed.offset !== view.byteLength) throw new TimestampError(`${what} has ${view.byteLength - parsed.offset} bytes after its end`);
  try {
    return make(parsed.result);
  } catch (err) {
    throw new TimestampError(`${what} is not well formed: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** The certificates of PEM text(s). */
function certificatesOf(pem: string | readonly string[]): pkijs.Certificate[] {
  const text = typeof pem === 'string' ? pem : pem.join('\n');
  const blocks = [...text.matchAll(/-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g)];
  if (blocks.length === 0) throw new TimestampError('the trusted certificates hold no PEM certificate');
  if (blocks.length > MAX_CERTIFICATES) throw new TimestampError(`more than ${MAX_CERTIFICATES} trusted certificates`);
  return blocks.map((b) => parseDer(Buffer.from(b[1].replace(/\s+/g, ''), 'base64'), 'a trusted certificate', (s) => new pkijs.Certificate({ schema: s })));
}

const NAME_KEYS: Record<string, string> = { '2.5.4.3': 'CN', '2.5.4.10': 'O', '2.5.4.11': 'OU', '2.5.4.6': 'C', '2.5.4.7': 'L', '2.5.4.8': 'ST' };

/** A distinguished name as `CN=…, O=…` (other attribute types by OID). */
function nameText(name: pkijs.RelativeDistinguishedNames): string {
  return name.typesAndValues
    .map((tv) => `${NAME_KEYS[tv.type] ?? tv.type}=${String((tv.value as { valueBlock?: { value?: unknown } }).valueBlock?.value ?? '?')}`)
    .join(', ');
}

/** The TSTInfo `tsa` name as text, when it is a directory name, DNS name or URI. */
function tsaNameText(g: pkijs.GeneralName | undefined): string | undefined {
  if (!g) return undefined;
  if (g.type === 4 && g.value instanceof pkijs.RelativeDistinguishedNames) return nameText(g.value);
  if ((g.type === 2 || g.type === 6) && typeof g.value === 'string') return g.value;
  return undefined;
}

/** The token's signed data and TSTInfo, after the status and content types are checked. */
function tokenParts(respDer: Buffer): { signed: pkijs.SignedData; info: pkijs.TSTInfo } {
  if (respDer.length > MAX_TIMESTAMP_BYTES) throw new TimestampError(`a timestamp answer of ${respDer.length} bytes (at most ${MAX_TIMESTAMP_BYTES})`);
  const resp = parseDer(respDer, 'the timestamp answer', (s) => new pkijs.TimeStampResp({ schema: s }));
  const status = resp.status.status;
  if (status !== pkijs.PKIStatus.granted && status !== pkijs.PKIStatus.grantedWithMods) {
    const text = resp.status.statusStrings?.map((s) => s.valueBlock.value).join('; ');
    throw new TimestampError(`the TSA did not grant a timestamp (status ${status}${text ? `: ${text.slice(0, 200)}` : ''})`);
  }
  const token = resp.timeStampToken;
  if (!token || token.contentType !== OID_SIGNED_DATA) throw new TimestampError('the timestamp answer holds no signed token');
  let signed: pkijs.SignedData;
  try {
    signed = new pkijs.SignedData({ schema: token.content });
  } catch (err) {
    throw new TimestampError(`the token is not CMS signed data: ${(err as Error).message.split('\n')[0]}`);
  }
  if (signed.encapContentInfo.eContentType !== OID_TST_INFO || !signed.encapContentInfo.eContent) throw new TimestampError('the token does not hold a TSTInfo');
  if (signed.signerInfos.length !== 1) throw new TimestampError(`the token has ${signed.signerInfos.length} signers, not one`);
  if ((signed.certificates?.length ?? 0) > MAX_CERTIFICATES) throw new TimestampError(`the token holds more than ${MAX_CERTIFICATES} certificates`);
  const info = parseDer(signed.encapContentInfo.eContent.getValue(), 'the TSTInfo', (s) => new pkijs.TSTInfo({ schema: s }));
  return { signed, info };
}

/** RFC 3161 §2.3: the TSA's certificate has one extended key usage, timeStamping, marked critical. */
function checkTsaCertificate(cert: pkijs.Certificate): void {
  const eku = cert.extensions?.filter((e) => e.extnID === OID_EXT_KEY_USAGE) ?? [];
  const usages = (eku[0]?.parsedValue as pkijs.ExtKeyUsage | undefined)?.keyPurposes ?? [];
  if (eku.length !== 1 || !eku[0].critical || usages.length !== 1 || usages[0] !== OID_TIME_STAMPING)
    throw new TimestampError(
      `the token's signer (${nameText(cert.subject)}) is not a certificate for timestamping only (critical extendedKeyUsage timeStamping)`,
    );
}

/**
 * Checks an RFC 3161 TimeStampResp over `data`: status granted (or
 * granted with modifications); a SignedData token with one signer and a
 * TSTInfo whose imprint is SHA-256 of `data`; the nonce, when one is
 * given; the CMS signature verifies with the signer's certificate from
 * the token; that certificate is for timestamping only (RFC 3161 §2.3);
 * and, when `trustedCertsPem` is given, it chains to one of them at the
 * token's time.
 *
 * @returns what the token says (time, serial, TSA name, signer, policy)
 * @throws TimestampError with the one-line reason of the first check that fails
 */
export async function checkTimestamp(respDer: Buffer, data: Buffer, opts: CheckTimestampOptions = {}): Promise<TimestampInfo> {
  const { signed, info } = tokenParts(respDer);
  const imprint = info.messageImprint;
  if (imprint.hashAlgorithm.algorithmId !== OID_SHA256) throw new TimestampError(`the token's imprint is not SHA-256 (${imprint.hashAlgorithm.algorithmId})`);
  const expected = createHash('sha256').update(data).digest();
  if (!Buffer.from(imprint.hashedMessage.valueBlock.valueHexView).equals(expected))
    throw new TimestampError('the token is over other data (its imprint differs)');
  if (opts.nonce !== undefined && info.nonce?.toBigInt() !== opts.nonce) throw new TimestampError('the token does not answer this request (its nonce differs)');
  const trusted = opts.trustedCertsPem === undefined ? [] : certificatesOf(opts.trustedCertsPem);
  let result: pkijs.SignedDataVerifyResult;
  try {
    result = (await signed.verify({
      signer: 0,
      data: new Uint8Array(data).buffer,
      trustedCerts: trusted,
      checkChain: trusted.length > 0,
      extendedMode: true,
    })) as pkijs.SignedDataVerifyResult;
  } catch (err) {
    const e = err as { message?: string; code?: number };
    const reason = String(e.message ?? err).split('\n')[0];
    // pkijs's SignedDataVerifyError code 5: the signer's certificate path
    if (e.code === 5) throw new TimestampError(`the TSA's certificate does not chain to the trusted certificates (${reason})`);
    throw new TimestampError(`the token's signature does not check: ${reason}`);
  }
  if (!result.signatureVerified || !result.signerCertificate) throw new TimestampError("the token's signature does not verify with its certificate");
  checkTsaCertificate(result.signerCertificate);
  return {
    genTime: info.genTime,
    serial: Buffer.from(info.serialNumber.valueBlock.valueHexView).toString('hex'),
    tsaName: tsaNameText(info.tsa),
    signer: nameText(result.signerCertificate.subject),
    policy: info.policy,
  };
}

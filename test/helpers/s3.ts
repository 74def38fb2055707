/**
 * An S3-compatible server for the tests of archives whose WARC files are
 * in a bucket (`storage.warcs: s3://…`). The AWS SDK finds the server's
 * credentials in the environment, as a daemon finds real ones.
 *
 * By default s3rver, in the test's own process, on 127.0.0.1 port 0 with a
 * temp folder. With `TEST_S3_ENDPOINT` set (e.g. `http://127.0.0.1:7480`,
 * a Ceph RGW; docs/scale-out.md), the same tests run against that server
 * instead: keys from `TEST_S3_ACCESS_KEY_ID` and
 * `TEST_S3_SECRET_ACCESS_KEY`, region `TEST_S3_REGION` (default
 * `us-east-1`); each {@link startS3} makes a bucket of its own, named
 * `<TEST_S3_BUCKET or the default>-<random>`, and {@link TestS3.close}
 * empties and deletes it. The tests reach it through a TCP relay on
 * 127.0.0.1 port 0, so that {@link TestS3.stop} can make the store
 * unreachable (the relay closes) as stopping s3rver does.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** An external S3 server named in the environment; `undefined` for s3rver. */
const external = process.env.TEST_S3_ENDPOINT
  ? {
      endpoint: process.env.TEST_S3_ENDPOINT.replace(/\/+$/, ''),
      region: process.env.TEST_S3_REGION ?? 'us-east-1',
      accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY ?? '',
    }
  : undefined;

// The server's key pair (s3rver's fixed one, or the external server's); the SDK's default chain reads these (no other source is consulted then).
process.env.AWS_ACCESS_KEY_ID = external ? external.accessKeyId : 'S3RVER';
process.env.AWS_SECRET_ACCESS_KEY = external ? external.secretAccessKey : 'S3RVER';
// The SDK's notice that its 2027 versions need Node 22: not what a test checks.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export interface TestS3 {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  bucket: string;
  /** A client of the server (path style, the checksum settings the daemon uses). */
  client: S3Client;
  /** The `storage:` lines of conf/archive.yaml for WARCs under `s3://<bucket>/<prefix>` written as `replica`. */
  storageYaml(prefix: string, replica: string): string;
  /** An object's bytes. */
  get(key: string): Promise<Buffer>;
  put(key: string, body: Buffer): Promise<void>;
  /** Stops the server (its data stays until `close`); requests to it then fail. */
  stop(): Promise<void>;
  /** Stops the server if running and removes its folder (or, on an external server, empties and deletes the bucket). */
  close(): Promise<void>;
}

/** A client of `endpoint` as the daemon makes one (path style, checksums only where required). */
function clientOf(endpoint: string, region = 'us-east-1'): S3Client {
  return new S3Client({ endpoint, region, forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
}

/** A TCP relay on 127.0.0.1 port 0 to `target` (`http://host:port`); `close` ends it and every connection through it. */
async function relay(target: string): Promise<{ endpoint: string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(Number(port || 80), hostname);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => (s === inbound ? outbound : inbound).destroy());
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** Starts s3rver with one empty bucket (default `warcs`), or makes a new bucket on the server of `TEST_S3_ENDPOINT`. */
export async function startS3(bucket = 'warcs'): Promise<TestS3> {
  let endpoint: string;
  let region = 'us-east-1';
  let stopServer: () => Promise<void>;
  let cleanUp: () => Promise<void>;
  if (external) {
    bucket = `${process.env.TEST_S3_BUCKET ?? bucket}-${randomBytes(4).toString('hex')}`;
    region = external.region;
    const admin = clientOf(external.endpoint, region);
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    admin.destroy();
    const r = await relay(external.endpoint);
    endpoint = r.endpoint;
    stopServer = r.close;
    cleanUp = async () => {
      const c = clientOf(external.endpoint, region);
      try {
        await emptyBucket(c, bucket);
        await c.send(new DeleteBucketCommand({ Bucket: bucket }));
      } finally {
        c.destroy();
      }
    };
  } else {
    const dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-test-'));
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: bucket, configs: [] }] });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
    stopServer = () => server.close();
    cleanUp = async () => rmSync(dir, { recursive: true, force: true });
  }
  const client = clientOf(endpoint, region);
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await stopServer();
  };
  return {
    endpoint,
    bucket,
    client,
    storageYaml: (prefix, replica) =>
      `storage:\n  warcs: s3://${bucket}/${prefix}\n  s3:\n    endpoint: ${endpoint}\n    region: ${region}\n    force_path_style: true\n  replica: ${replica}\n`,
    async get(key) {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await r.Body!.transformToByteArray());
    },
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    stop,
    async close() {
      client.destroy();
      await stop();
      await cleanUp();
    },
  };
}

/** Deletes every object and unfinished multipart upload of `bucket`. */
async function emptyBucket(c: S3Client, bucket: string): Promise<void> {
  let token: string | undefined;
  do {
    const r = await c.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of r.Contents ?? []) await c.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key! }));
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  const uploads = await c.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
  for (const u of uploads.Uploads ?? []) await c.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key!, UploadId: u.UploadId! }));
}

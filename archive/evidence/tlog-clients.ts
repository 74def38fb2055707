/**
 * The network clients of the checkpoint publisher (checkpoint-publisher.ts):
 * C2SP tlog-witness submissions (witness-client.ts) and RFC 3161
 * time-stamp requests (timestamp.ts), each bounded in bytes and time.
 */
import type { TlogClients } from './checkpoint-publisher.js';
import { requestTimestamp } from './timestamp.js';
import { addCheckpoint } from './witness-client.js';

/** The real clients. */
export const tlogClients: TlogClients = {
  addCheckpoint: (witness, req) => addCheckpoint(witness, req),
  timestamp: (url, data) => requestTimestamp(url, data),
};

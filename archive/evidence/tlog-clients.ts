/**
 * The network clients of the checkpoint publisher (checkpoint-publisher.ts):
 * C2SP tlog-witness submissions (witness-client.ts) and RFC 3161
 * time-stamp requests (timestamp.ts), each bounded in bytes and time,
 * each module loaded when first needed.
 */
import type { TlogClients } from './checkpoint-publisher.js';

/** The real clients, loaded on first use (pkijs and asn1js cost a daemon without `tsa_url` some 20 MiB of memory for nothing). */
export const tlogClients: TlogClients = {
  addCheckpoint: async (witness, req) => (await import('./witness-client.js')).addCheckpoint(witness, req),
  timestamp: async (url, data) => (await import('./timestamp.js')).requestTimestamp(url, data),
};

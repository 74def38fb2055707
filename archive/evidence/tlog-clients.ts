/**
 * The network clients of the checkpoint publisher (checkpoint-publisher.ts):
 * C2SP tlog-witness submissions and RFC 3161 time-stamp requests.
 */
import type { TlogClients } from './checkpoint-publisher.js';

/** The real clients. */
export const tlogClients: TlogClients = {
  addCheckpoint: async () => {
    throw new Error('no witness client in this build');
  },
  timestamp: async () => {
    throw new Error('no time-stamp client in this build');
  },
};

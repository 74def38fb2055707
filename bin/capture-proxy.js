#!/usr/bin/env node
// Runs the capture proxy's TypeScript directly (tsx); see proxy/cli.ts.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../proxy/cli.ts');
await main(process.argv.slice(2));

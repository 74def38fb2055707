#!/usr/bin/env node
// Runs the archive daemon's TypeScript directly (tsx); see archive/cli.ts.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../archive/cli.ts');
await main(process.argv.slice(2));

import type http from 'node:http';
/** Starts a static file server over `root` (serve-static); see sample-site.js. */
export function startStaticServer(
  root: string,
  listen?: { host?: string; port?: number },
): Promise<{ url: string; server: http.Server; close: () => Promise<void> }>;

/**
 * A replayed page never reaches the live network, in Chromium, in every
 * form a browser can be sent to: the archival replay at the top, the same
 * inside the `/web/` banner page's frame (and the banner's "Raw" link),
 * the raw form (`id_`) and the original-links form (`ol_`).
 *
 * The hostile page (captured through a PUT) tries every way out that a
 * browser offers besides fetches: WebRTC (a STUN server and a TURN server
 * of its choice), `<link rel=preconnect>` and `dns-prefetch` (a TCP
 * connect, DNS lookups: an exfiltration channel), `prefetch`, speculation
 * rules, `window.open` and a `target=_blank` link of a live URL, the same
 * hints made by script, and a stylesheet, images (one relative: the
 * `ol_` form's base element sends it to the live site), an iframe and a
 * fetch of the live site.
 *
 * Three traps stand for the live web, all on loopback: a UDP socket on
 * 127.0.0.2 (the STUN server), a TCP server on 127.0.0.3 (the live site's
 * address), and Chromium's own NetLog for names: `--host-resolver-rules`
 * maps each trap name to a `.localhost` name (resolved by Chromium itself
 * to loopback, nothing sent) and every other name to nothing, so no lookup
 * ever leaves the machine, and a lookup of a trap name shows in the NetLog
 * as a host resolution of its `.localhost` stand-in. A form passes when,
 * after its page has run (or its download began) and the browser closed,
 * no trap saw anything.
 */
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Frame, Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { ts14 } from '../conformance/helpers.js';
import { captureRecord, putCapture, request, startArchive, type TestArchive } from '../helpers/archive.js';
import { launchBrowser, SCREENSHOT_DIR } from '../helpers/browser.js';

const DATE = 'Thu, 20 Mar 2025 10:00:00 GMT';
const ID = '2025';
/** The trap names: the page's own site, and one per way out that names a host. */
const NAMES = ['site', 'preconnect', 'dns-prefetch', 'rtc', 'popup', 'anchor', 'script-hint'].map((n) => `${n}.trap.test`);
const SITE = 'http://site.trap.test';

/** What the traps saw. */
interface Seen {
  udp: string[];
  tcp: string[];
  /** Trap names the browser resolved (NetLog host resolutions of their `.localhost` stand-ins). */
  resolved: string[];
  /** Trap names in URLs the browser asked for or connected to (NetLog requests, stream jobs, socket pools). */
  named: string[];
}

/** The UDP and TCP traps, on loopback addresses of their own; closed at the end of `t`. */
async function traps(t: Test): Promise<{ udpPort: number; live: string; udp: string[]; tcp: string[] }> {
  const udp: string[] = [];
  const tcp: string[] = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (m, from) => udp.push(`${m.length} bytes from ${from.address}`));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.2', resolve));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const server = net.createServer((s) => {
    tcp.push('connect');
    s.once('data', (d) => tcp.push(d.toString('latin1').split('\r\n')[0]));
    s.on('error', () => undefined);
    // Answer nothing and hang up soon: the request line is what counts.
    s.setTimeout(200, () => s.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.3', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { udpPort: socket.address().port, live: `http://127.0.0.3:${(server.address() as net.AddressInfo).port}`, udp, tcp };
}

/**
 * A script that tries WebRTC (a STUN server and a TURN server of the page's
 * choice) and then runs `report` with its result in `r` (`made`, or the
 * error's name); no double quotes, so that it fits in an attribute.
 */
function rtcScript(udpPort: number, tcpPort: string, report: string): string {
  return `(function () {
  var ended = false;
  function end(r) { if (!ended) { ended = true; ${report}; } }
  try {
    var pc = new RTCPeerConnection({ iceServers: [
      { urls: ['stun:127.0.0.2:${udpPort}', 'stun:rtc.trap.test:${udpPort}'] },
      { urls: 'turn:127.0.0.3:${tcpPort}?transport=tcp', username: 'u', credential: 'p' },
    ] });
    pc.createDataChannel('out');
    pc.createOffer().then(function (o) { return pc.setLocalDescription(o); }).then(function () {
      // Gathering has begun: its STUN and TURN packets go out now; the end of gathering (or 3 s) ends the attempt.
      pc.onicecandidate = function (e) { if (!e.candidate) end('made'); };
      setTimeout(function () { end('made'); }, 3000);
    }, function (e) { end('offer ' + e.name); });
  } catch (e) { end(e.name); }
})();`;
}

/**
 * The hostile page: every way out, by markup and by script, in itself and
 * in child documents of its own (a `srcdoc` in its markup, a `srcdoc` a
 * script sets, a `data:` document), each trying WebRTC; its title becomes
 * `done: <what happened>` when it has heard of every attempt.
 */
function hostilePage(live: string, udpPort: number): string {
  const tcpPort = new URL(live).port;
  // A value as script text inside a script element (no `</` to end it).
  const js = (v: unknown) => JSON.stringify(v).replace(/<\//g, '<\\/');
  const child = (name: string) => `<script>${rtcScript(udpPort, tcpPort, `parent.postMessage({ child: '${name}', result: r }, '*')`)}</script>`;
  return `<!DOCTYPE html><html><head><title>hostile</title>
<meta http-equiv="x-dns-prefetch-control" content="on">
<link rel="preconnect" href="${live}/">
<link rel="preconnect" href="http://preconnect.trap.test/">
<link rel="dns-prefetch" href="//dns-prefetch.trap.test">
<link rel="prefetch" href="${live}/prefetch">
<link rel="stylesheet" href="${live}/style.css">
<script type="speculationrules">{"prefetch": [{"source": "list", "urls": [${js(`${live}/speculation`)}]}]}</script>
<script>
var out = [];
var heardOf = [];
var waiting = { 'rtc': 1, 'markup-srcdoc': 1, 'script-srcdoc': 1, 'data-frame': 1 };
function done() { var all = out.concat(heardOf.sort()).join(' | '); document.getElementById('out').textContent = all; document.title = 'done: ' + all; }
function heard(name, r) {
  if (!waiting[name]) return;
  delete waiting[name];
  heardOf.push(name + ': ' + r);
  if (!Object.keys(waiting).length) done();
}
addEventListener('message', function (e) { if (e.data && e.data.child) heard(e.data.child, e.data.result); });
// The one frame the replay's policy refuses is the data: one (an opaque origin sees no blocked URI).
document.addEventListener('securitypolicyviolation', function (e) { if (e.effectiveDirective === 'frame-src') heard('data-frame', 'refused'); });
</script>
</head><body><h1>A hostile page</h1>
<p><img src="${live}/image.png" alt="live image"> <img src="relative.png" alt="relative image"> <a id="blank" href="${live}/blank-link" target="_blank">a new tab</a> <a href="http://anchor.trap.test/">a link</a></p>
<iframe src="${live}/frame.html" width="200" height="50"></iframe>
<iframe srcdoc="${child('markup-srcdoc')}" width="50" height="50"></iframe>
<p id="out">not run</p>
<script>
function step(name, f) { try { out.push(name + ': ' + f()); } catch (e) { out.push(name + ': ' + e.name); } }
// Hints made by script.
step('hint', function () {
  var l = document.createElement('link'); l.rel = 'preconnect'; l.href = 'http://script-hint.trap.test/'; document.head.appendChild(l);
  var s = document.createElement('script'); s.type = 'speculationrules';
  s.textContent = JSON.stringify({ prefetch: [{ source: 'list', urls: [${js(`${live}/script-speculation`)}] }] }); document.head.appendChild(s);
  return 'made';
});
step('fetch', function () { fetch(${js(`${live}/fetch`)}).catch(function () {}); return 'asked'; });
step('open', function () { return [${js(`${live}/popup`)}, 'http://popup.trap.test/'].map(function (u) { return window.open(u) ? 'opened' : 'null'; }).join(' '); });
step('blank', function () { document.getElementById('blank').click(); return 'clicked'; });
// Child documents with scripts of their own.
step('frames', function () {
  var f = document.createElement('iframe'); f.srcdoc = ${js(child('script-srcdoc'))}; document.body.appendChild(f);
  var d = document.createElement('iframe'); d.src = 'data:text/html,' + encodeURIComponent(${js(child('data-frame'))}); document.body.appendChild(d);
  return 'made';
});
${rtcScript(udpPort, tcpPort, "heard('rtc', r)")}
</script></body></html>`;
}

/** Chromium's switches: a NetLog, the trap names resolved only to loopback stand-ins, every other name to nothing, no mDNS. */
function browserArgs(netlog: string): string[] {
  const rules = [
    ...NAMES.map((n) => `MAP ${n} ${n.replace(/\.test$/, '.localhost')}:9`),
    'MAP * ~NOTFOUND',
    'EXCLUDE 127.0.0.1',
    'EXCLUDE 127.0.0.2',
    'EXCLUDE 127.0.0.3',
  ];
  return [
    `--log-net-log=${netlog}`,
    '--net-log-capture-mode=Everything',
    `--host-resolver-rules=${rules.join(', ')}`,
    // WebRTC would otherwise announce its host candidates by multicast DNS on every interface.
    '--disable-features=WebRtcHideLocalIpsWithMdns',
  ];
}

/**
 * The trap names in a NetLog (Chromium's JSON format): hosts it resolved
 * (`HOST_RESOLVER_MANAGER_REQUEST` / `_JOB`: the `.localhost` stand-ins),
 * and hosts of the URLs its events name (each string value read as
 * whitespace-separated tokens; a token is a URL only as a whole, so that a
 * trap URL inside an archive address does not count).
 */
function netlogNames(file: string): { resolved: string[]; named: string[] } {
  const text = readFileSync(file, 'utf8');
  // Complete when the browser closed cleanly; else cut after an event (Chromium writes one per line).
  const log = JSON.parse(/\]\s*\}\s*$/.test(text) ? text : text.replace(/,\s*$/, '') + ']}') as {
    constants: { logEventTypes: Record<string, number> };
    events: { type: number; params?: unknown }[];
  };
  const types = new Map(Object.entries(log.constants.logEventTypes).map(([k, v]) => [v, k]));
  const resolved = new Set<string>();
  const named = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const token of v.split(/\s+/)) {
        if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(token)) continue;
        try {
          const host = new URL(token).hostname;
          if (host.endsWith('.trap.test')) named.add(host);
        } catch {
          // not a URL
        }
      }
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') Object.values(v).forEach(visit);
  };
  for (const e of log.events) {
    const type = types.get(e.type) ?? '';
    const host = (e.params as { host?: unknown } | undefined)?.host;
    if (/^HOST_RESOLVER_MANAGER_(REQUEST|JOB)$/.test(type) && typeof host === 'string') {
      const m = /([a-z-]+)\.trap\.localhost/.exec(host);
      if (m) resolved.add(`${m[1]}.trap.test`);
    }
    visit(e.params);
  }
  return { resolved: [...resolved].sort(), named: [...named].sort() };
}

/** One browser for one visit: its NetLog, downloads refused (and counted). */
async function visit(
  name: string,
  go: (tab: Page, downloads: string[]) => Promise<void>,
  trapsOf: { udp: string[]; tcp: string[] },
): Promise<Seen & { downloads: string[] }> {
  trapsOf.udp.length = 0;
  trapsOf.tcp.length = 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replay-network-'));
  const netlog = path.join(dir, 'netlog.json');
  let browser: Browser | undefined;
  const downloads: string[] = [];
  try {
    browser = await launchBrowser(browserArgs(netlog));
    const cdp = await browser.target().createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'deny', eventsEnabled: true });
    cdp.on('Browser.downloadWillBegin', (e) => downloads.push(e.url));
    const tab = await browser.newPage();
    await go(tab, downloads);
    await tab.bringToFront();
    await tab.screenshot({ path: path.join(SCREENSHOT_DIR, `replay-network-${name}.png`) }).catch(() => undefined);
  } finally {
    await browser?.close();
  }
  const names = netlogNames(netlog);
  rmSync(dir, { recursive: true, force: true });
  return { udp: [...trapsOf.udp], tcp: [...trapsOf.tcp], ...names, downloads };
}

/** Waits until `frame`'s page has tried every way out (its title says so), or until a download began; the page's report, or `download`. */
async function ranOrDownloaded(tab: Page, frame: () => Promise<Frame | undefined>, downloads: string[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (downloads.length) return 'download';
    const f = await frame().catch(() => undefined);
    // A page busy navigating may leave an evaluation unanswered: ask again.
    const title = await Promise.race([f?.evaluate(() => document.title), new Promise<undefined>((r) => setTimeout(r, 2000))]).catch(() => undefined);
    if (title?.startsWith('done: ')) {
      await tab.waitForNetworkIdle({ idleTime: 500 }).catch(() => undefined);
      return title.slice('done: '.length);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const f = await frame().catch(() => undefined);
  const state = await f?.evaluate(() => document.getElementById('out')?.textContent).catch((e) => String(e));
  throw new Error(`the page neither ran to its end nor became a download within 20 s (it says: ${state})`);
}

/** Nothing reached a trap. */
function nothingLeft(t: Test, form: string, seen: Seen): void {
  t.same(seen.udp, [], `${form}: the UDP trap (STUN) got no packet`);
  t.same(seen.tcp, [], `${form}: the TCP trap (the live site) got no connect`);
  t.same(seen.resolved, [], `${form}: no trap name was looked up`);
  t.same(seen.named, [], `${form}: the browser asked for no URL on a trap name`);
}

t.test('a hostile page reaches no trap in any replay form', async (t) => {
  const { udpPort, live, udp, tcp } = await traps(t);
  const a: TestArchive = await startArchive();
  t.teardown(() => a.close());
  const uriR = `${SITE}/hostile.html`;
  const put = await putCapture(
    a,
    uriR,
    captureRecord({
      host: 'site.trap.test',
      target: '/hostile.html',
      date: DATE,
      responseHeaders: [['Content-Type', 'text/html; charset=utf-8']],
      body: hostilePage(live, udpPort),
    }),
  );
  t.equal(put.status, 201, 'captured');
  const ts = ts14(DATE);
  const memento = (form: string) => `${a.url}/${ID}/memento/${ts}${form}/${uriR}`;
  const sink = { udp, tcp };
  // What the page reports when it ran and every way out failed.
  const REPLAYED = [
    'hint: made',
    'fetch: asked',
    'open: null null',
    'blank: clicked',
    'frames: made',
    'data-frame: refused',
    'markup-srcdoc: ReferenceError',
    'rtc: ReferenceError',
    'script-srcdoc: ReferenceError',
  ].join(' | ');

  // The archival replay, at the top of the tab; then a reader's click on its link to a new tab.
  let report = '';
  let landed = '';
  const top = await visit(
    'top',
    async (tab, downloads) => {
      await tab.goto(memento(''));
      report = await ranOrDownloaded(tab, async () => tab.mainFrame(), downloads);
      // (Where a new tab opens instead, this tab stays: the check below says so.) A tab in the background gets no click.
      await tab.bringToFront();
      await Promise.all([tab.waitForNavigation({ timeout: 10_000 }).catch(() => undefined), tab.click('#blank')]);
      landed = tab.url();
    },
    sink,
  );
  t.comment(`top: the page says ${report}`);
  t.equal(report, REPLAYED, 'top: the page ran, and could open nothing, nor use WebRTC');
  t.equal(landed, `${a.url}/${ID}/memento/${ts}/${live}/blank-link`, "a reader's click on a link to a new tab opens it in place, in the archive");
  nothingLeft(t, 'archival replay at the top', top);

  // The same in the banner page's frame; then the banner's "Raw" link.
  const framed = await visit(
    'web-frame',
    async (tab, downloads) => {
      await tab.goto(`${a.url}/web/${ts}/${uriR}`);
      const frame = async () => (await (await tab.$('#memento-frame'))?.contentFrame()) ?? undefined;
      report = await ranOrDownloaded(tab, frame, downloads);
    },
    sink,
  );
  t.comment(`web frame: the page says ${report}`);
  t.equal(report, REPLAYED, 'in the frame: the page ran, and could open nothing, nor use WebRTC');
  nothingLeft(t, 'archival replay in the /web/ frame', framed);

  let raw = '';
  const banner = await visit(
    'banner-raw',
    async (tab, downloads) => {
      await tab.goto(`${a.url}/web/${ts}/${uriR}`, { waitUntil: 'networkidle0' });
      const link = await tab.$('#banner a::-p-text(Raw)');
      t.ok(link, 'the banner has its Raw link');
      t.equal(await link?.evaluate((e) => e.getAttribute('target')), null, 'which names no target (no _top)');
      // The page's own popups may have taken the foreground (a tab in the background never gets the click).
      await tab.bringToFront();
      await link?.click();
      raw = await ranOrDownloaded(tab, async () => tab.mainFrame(), downloads);
    },
    sink,
  );
  t.equal(raw, 'download', 'the Raw link gives the stored bytes as a download');
  t.same(banner.downloads, [memento('id_')], 'of the raw form');
  nothingLeft(t, 'the banner page after its Raw link', banner);

  for (const form of ['id_', 'ol_']) {
    const seen = await visit(
      form,
      async (tab, downloads) => {
        await tab.goto(memento(form)).catch(() => undefined); // a download aborts the navigation
        report = await ranOrDownloaded(tab, async () => tab.mainFrame(), downloads);
      },
      sink,
    );
    t.equal(report, 'download', `${form}: a browser gets the stored page as a download, never rendered`);
    t.same(seen.downloads, [memento(form)]);
    nothingLeft(t, form, seen);
    const head = await request(memento(form), { method: 'HEAD' });
    t.match(head.headers['content-disposition'], /^attachment/, `${form}: Content-Disposition: attachment`);
    t.match(head.headers['content-security-policy'], /^sandbox; default-src 'none'/, `${form}: no script, no fetch, if a browser rendered it all the same`);
  }
});

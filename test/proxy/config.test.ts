/**
 * The proxy's config files as a sysadmin writes them: conf/proxy.yaml and
 * vhost files, their defaults, and the errors a mistake gives (file:line:
 * reason). Also the Excluded matching rules.
 */

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { isExcludedPath } from '../../proxy/config/excluded.js';
import { defaultWorkers, loadProxyConfig, PROXY_DEFAULTS } from '../../proxy/config/proxy-file.js';
import { loadVhostFile, parseVhostText, VHOST_DEFAULTS } from '../../proxy/config/vhost-file.js';
import { ConfigError } from '#shared/config.js';
import { tempDir } from './helpers.js';

/** The message of the ConfigError that `fn` throws. */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('no ConfigError thrown');
}

t.test('a minimal vhost gets the documented defaults', async (t) => {
  const [v] = parseVhostText('server_name: WWW.Example.org\nupstream: http://127.0.0.1:8081\n', 'site.yaml');
  t.equal(v.serverName, 'www.example.org', 'server_name is lower-cased');
  t.equal(v.upstream, 'http://127.0.0.1:8081');
  t.equal(v.isDefault, false);
  t.equal(v.enableArchiving, true, 'EnableArchiving On');
  t.equal(v.archiveHost, '127.0.0.1');
  t.equal(v.archivePort, 8090);
  t.equal(v.archivePath, '/put/');
  t.equal(v.archiveTimeGate, 'http://127.0.0.1:8090/tg/', 'ArchiveTimeGate derived from ArchiveHost:ArchivePort');
  t.equal(v.enableIP, false, 'EnableIP Off');
  t.same(v.excluded, []);
  t.equal(v.archiveToken, undefined, 'no ArchiveToken');
  t.equal(v.archivePrivate, false, 'ArchivePrivate Off');
  t.equal(v.archiveCookies, false, 'ArchiveCookies Off');
  t.equal(v.useCanonicalName, false, 'UseCanonicalName Off');
  t.equal(v.proxyPassReverse, true, 'ProxyPassReverse On');
  t.equal(v.archiveUnchangedCache, true, 'ArchiveUnchangedCache On');
  t.equal(v.obsolete, undefined, 'no obsolete setting');
  t.ok(v.privateCookies.includes('PHPSESSID') && v.privateCookies.includes('ASPSESSIONID*'), 'PrivateCookies: the common session cookies');
  t.same(VHOST_DEFAULTS, {
    UseCanonicalName: false,
    ProxyPassReverse: true,
    EnableArchiving: true,
    ArchiveHost: '127.0.0.1',
    ArchivePort: 8090,
    ArchivePath: '/put/',
    ArchiveTimeGate: null,
    ArchiveUnchangedCache: true,
    ArchiveConditional: null,
    EnableIP: false,
    Excluded: [],
    ArchiveToken: null,
    ArchivePrivate: false,
    PrivateCookies: [...v.privateCookies],
    ArchiveCookies: false,
  });
  t.same(PROXY_DEFAULTS, {
    listen: '127.0.0.1:8080',
    vhosts: 'vhosts/',
    spool: '../data/spool',
    spool_max_bytes: 4294967296,
    spool_slow_disk: 'wait',
    spool_retry_min: 1,
    spool_retry_max: 60,
    admin_listen: 'off',
    request_timeout: 300,
    headers_timeout: 60,
    max_connections: 4096,
    upstream_timeout: 60,
    archive_timeout: 60,
    archive_connections: 64,
    held_max_bytes: 65536,
    workers: 'auto',
  });
});

t.test('every setting, the Apache spellings and true/false', async (t) => {
  const [v] = parseVhostText(
    `server_name: www.example.org
server_aliases: [Example.org, 192.0.2.1]
upstream: http://content.local:8081/
default: true
EnableArchiving: Off
ArchiveHost: archive.local
ArchivePort: "9000"
ArchivePath: /wayback/put/
EnableIP: true
Excluded: /private /search/
`,
    'site.yaml',
  );
  t.same(v.names, ['www.example.org', 'example.org', '192.0.2.1']);
  t.equal(v.upstream, 'http://content.local:8081');
  t.equal(v.isDefault, true);
  t.equal(v.enableArchiving, false);
  t.equal(v.archiveHost, 'archive.local');
  t.equal(v.archivePort, 9000);
  t.equal(v.archivePath, '/wayback/put/');
  t.equal(v.archiveTimeGate, 'http://archive.local:9000/tg/', 'TimeGate default follows ArchiveHost and ArchivePort');
  t.equal(v.enableIP, true);
  t.same(v.excluded, ['/private', '/search'], 'a trailing slash is dropped');
  t.match(v.source, /site\.yaml:1$/);
  const [w] = parseVhostText('server_name: a.example\nupstream: http://127.0.0.1\nArchiveTimeGate: tg.example/memento/tg/\nEnableArchiving: on\n', 'b.yaml');
  t.equal(w.archiveTimeGate, 'http://tg.example/memento/tg/', 'an address without scheme is http://');
  t.equal(w.upstream, 'http://127.0.0.1:80', 'port 80 when upstream has none');
  t.equal(w.enableArchiving, true, 'on (lower case) is On');
});

t.test('ArchiveUnchangedCache; ArchiveConditional is obsolete: a vhost that has it loads, with one warning naming it', async (t) => {
  const [v] = parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveConditional: Off\nArchiveUnchangedCache: false\n', 'v.yaml');
  t.equal(v.archiveUnchangedCache, false);
  t.equal(v.obsolete?.length, 1, 'one warning');
  t.match(v.obsolete?.[0], /v\.yaml:3: ArchiveConditional is obsolete and ignored/);
  t.match(
    errorOf(() => parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveConditional: maybe\n', 'v.yaml')),
    /v\.yaml:3: ArchiveConditional must be On or Off/,
  );
});

t.test('ArchiveToken, ArchivePrivate, ArchiveCookies', async (t) => {
  const [v] = parseVhostText(
    'server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveToken: s3cr3t-Tok.en_~+/==\nArchivePrivate: On\nArchiveCookies: true\n',
    'v.yaml',
  );
  t.equal(v.archiveToken, 's3cr3t-Tok.en_~+/==');
  t.equal(v.archivePrivate, true);
  t.equal(v.archiveCookies, true);
  t.match(
    errorOf(() => parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveToken: has space\n', 'v.yaml')),
    /v\.yaml:3: ArchiveToken must be a bearer token/,
  );
  t.match(
    errorOf(() => parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePrivate: Of\n', 'v.yaml')),
    /v\.yaml:3: ArchivePrivate must be On or Off/,
  );
  t.match(
    errorOf(() => parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveCookies: 1\n', 'v.yaml')),
    /v\.yaml:3: ArchiveCookies must be On or Off/,
  );
});

t.test('a list of vhosts, and several documents, in one file', async (t) => {
  const list = parseVhostText(
    '- server_name: a.example\n  upstream: http://127.0.0.1:1\n- server_name: b.example\n  upstream: http://127.0.0.1:2\n',
    'list.yaml',
  );
  t.same(
    list.map((v) => [v.serverName, v.upstream]),
    [
      ['a.example', 'http://127.0.0.1:1'],
      ['b.example', 'http://127.0.0.1:2'],
    ],
  );
  t.match(list[1].source, /list\.yaml:3$/);
  const docs = parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\n---\nserver_name: b.example\nupstream: http://127.0.0.1:2\n', 'docs.yaml');
  t.same(
    docs.map((v) => v.serverName),
    ['a.example', 'b.example'],
  );
  t.match(docs[1].source, /docs\.yaml:4$/);
  t.same(parseVhostText('# nothing here yet\n', 'empty.yaml'), [], 'an empty file defines no vhost');
});

t.test('a misspelt key is named with the key probably meant (edit distance, case ignored)', async (t) => {
  const ok = 'server_name: a.example\nupstream: http://127.0.0.1:1\n';
  const cases: [string, string, string][] = [
    [
      'a required key misspelt: named as unknown, not as missing',
      'server_name: a.example\nupstrem: http://127.0.0.1:1\n',
      'v.yaml:2: unknown setting "upstrem" (did you mean "upstream"?)',
    ],
    ['two letters swapped', ok + 'ArchiveHots: x\n', 'v.yaml:3: unknown setting "ArchiveHots" (did you mean "ArchiveHost"?)'],
    ['a letter off and another case', ok + 'enablearchving: Off\n', 'v.yaml:3: unknown setting "enablearchving" (did you mean "EnableArchiving"?)'],
    ['two edits', ok + 'Exclude: /x\nEnableIPP: On\n', 'v.yaml:3: unknown setting "Exclude" (did you mean "Excluded"?)'],
    ['only case', ok + 'enableip: On\n', 'v.yaml:3: unknown setting "enableip" (did you mean "EnableIP"? names are case-sensitive)'],
  ];
  for (const [what, text, message] of cases) t.equal(errorOf(() => parseVhostText(text, 'v.yaml')).replace(/^.*\//, ''), message, what);
  const far = errorOf(() => parseVhostText(ok + 'backend: x\n', 'v.yaml'));
  t.match(far, /unknown setting "backend"; known settings: server_name, server_aliases, upstream,/, 'nothing near: the list of known keys');
  t.notMatch(far, /did you mean/);
  t.match(
    errorOf(() => parseVhostText('upstream: http://127.0.0.1:1\n', 'v.yaml')),
    /v\.yaml:1: server_name is missing/,
    'a key truly missing is still said so',
  );
});

t.test('mistakes are ConfigErrors naming file:line and the reason', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['unknown setting', 'server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveHots: x\n', /v\.yaml:3: unknown setting "ArchiveHots"/],
    [
      'case of a setting',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nenableip: On\n',
      /v\.yaml:3: unknown setting "enableip" \(did you mean "EnableIP"\?/,
    ],
    [
      'port out of range',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePort: 99999\n',
      /v\.yaml:3: ArchivePort must be a port number 1-65535, not 99999/,
    ],
    ['port not a number', 'server_name: a.example\nupstream: http://127.0.0.1:1\n\nArchivePort: eighty\n', /v\.yaml:4: ArchivePort must be a port number/],
    [
      'On/Off misspelt',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nEnableArchiving: Onn\n',
      /v\.yaml:3: EnableArchiving must be On or Off \(or true\/false\), not "Onn"/,
    ],
    ['EnableIP misspelt', 'server_name: a.example\nupstream: http://127.0.0.1:1\nEnableIP: yes please\n', /v\.yaml:3: EnableIP must be On or Off/],
    ['missing upstream', '# site\nserver_name: a.example\nEnableIP: On\n', /v\.yaml:2: upstream is missing/],
    ['missing server_name', 'upstream: http://127.0.0.1:1\n', /v\.yaml:1: server_name is missing/],
    ['upstream not http', 'server_name: a.example\nupstream: ftp://127.0.0.1:1\n', /v\.yaml:2: upstream must be http:\/\/host\[:port\]/],
    ['upstream with a path', 'server_name: a.example\nupstream: http://127.0.0.1:1/app\n', /v\.yaml:2: upstream must be/],
    [
      'ArchivePath without put/',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePath: /archive/\n',
      /v\.yaml:3: ArchivePath must be a path starting with \/ whose last segment is put\//,
    ],
    ['ArchivePath output/', 'server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePath: /output/\n', /v\.yaml:3: ArchivePath/],
    [
      'ArchiveTimeGate with a scheme other than http(s)',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveTimeGate: ftp://127.0.0.1:8090/tg/\n',
      /v\.yaml:3: ArchiveTimeGate is an address without scheme, like 127\.0\.0\.1:8090\/tg\/, or an https:\/\/ or http:\/\/ URL/,
    ],
    [
      'ArchiveTimeGate without /',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveTimeGate: 127.0.0.1:8090/tg\n',
      /v\.yaml:3: ArchiveTimeGate must be host\[:port\]\/path\/ or https:\/\/host\[:port\]\/path\/, ending in \//,
    ],
    [
      'ArchiveHost with port',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nArchiveHost: 127.0.0.1:8090\n',
      /v\.yaml:3: ArchiveHost must be a host name \(a host name only/,
    ],
    ['server_name with scheme', 'server_name: http://a.example\nupstream: http://127.0.0.1:1\n', /v\.yaml:1: server_name must be a host name/],
    [
      'Excluded not a path',
      'server_name: a.example\nupstream: http://127.0.0.1:1\nExcluded: private\n',
      /v\.yaml:3: each Excluded entry must be a path starting with \//,
    ],
    [
      'bad alias in a list',
      'server_name: a.example\nserver_aliases:\n  - b.example\n  - "*.example"\nupstream: http://127.0.0.1:1\n',
      /v\.yaml:4: server_aliases entry must be a host name/,
    ],
    [
      'second item of a list',
      '- server_name: a.example\n  upstream: http://127.0.0.1:1\n- server_name: b.example\n  upstream: http://127.0.0.1:2\n  EnableIP: maybe\n',
      /v\.yaml:5: EnableIP must be On or Off/,
    ],
    [
      'second document',
      'server_name: a.example\nupstream: http://127.0.0.1:1\n---\nserver_name: b.example\nupstream: http://127.0.0.1:2\nFoo: 1\n',
      /v\.yaml:6: unknown setting "Foo"/,
    ],
    [
      'name twice',
      '- server_name: a.example\n  upstream: http://127.0.0.1:1\n- server_name: A.example\n  upstream: http://127.0.0.1:2\n',
      /v\.yaml:3: host name "a\.example" is already served by the vhost at .*v\.yaml:1/,
    ],
    [
      'two defaults',
      '- server_name: a.example\n  default: true\n  upstream: http://127.0.0.1:1\n- server_name: b.example\n  default: On\n  upstream: http://127.0.0.1:2\n',
      /v\.yaml:4: a second vhost with default: true/,
    ],
    ['not a mapping', '- just a string\n', /v\.yaml:1: a vhost must be a mapping/],
    ['YAML syntax', 'server_name: a.example\nupstream: [http://127.0.0.1:1\n', /v\.yaml:\d+: /],
  ];
  for (const [what, text, expected] of cases)
    t.match(
      errorOf(() => parseVhostText(text, 'v.yaml')),
      expected,
      what,
    );
});

t.test('loadVhostFile names the real file', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'site.yaml');
  await writeFile(file, 'server_name: a.example\nupstream: http://127.0.0.1:1\nArchivePort: 0\n');
  t.equal(
    errorOf(() => loadVhostFile(file)),
    `${file}:3: ArchivePort must be a port number 1-65535, not 0`,
  );
  t.match(
    errorOf(() => loadVhostFile(path.join(dir, 'missing.yaml'))),
    /missing\.yaml: cannot read/,
  );
});

t.test('conf/proxy.yaml: defaults, relative paths, errors', async (t) => {
  const dir = await tempDir(t);
  await mkdir(path.join(dir, 'conf', 'vhosts'), { recursive: true });
  const file = path.join(dir, 'conf', 'proxy.yaml');
  await writeFile(file, '# nothing set\n');
  const c = loadProxyConfig(file);
  t.same(c.listen, { host: '127.0.0.1', port: 8080 });
  t.equal(c.vhostsDir, path.join(dir, 'conf', 'vhosts'), 'vhosts/ relative to the file');
  t.equal(c.spoolDir, path.join(dir, 'data', 'spool'), '../data/spool relative to the file');
  t.match(
    c,
    {
      spoolMaxBytes: 4294967296,
      spoolSlowDisk: 'wait',
      spoolRetryMinMs: 1000,
      spoolRetryMaxMs: 60000,
      requestTimeoutMs: 300000,
      headersTimeoutMs: 60000,
      maxConnections: 4096,
      upstreamTimeoutMs: 60000,
      archiveTimeoutMs: 60000,
      archiveConnections: 64,
      heldMaxBytes: 65536,
    },
    'documented defaults',
  );
  t.equal(c.adminListen, undefined, 'no admin server by default');
  t.equal(c.tls, undefined, 'no TLS by default');

  await writeFile(path.join(dir, 'conf', 'cert.pem'), 'x');
  await writeFile(path.join(dir, 'conf', 'key.pem'), 'x');
  await writeFile(
    file,
    'spool_max_bytes: 1000\nspool_slow_disk: drop\nspool_retry_min: 0.5\nspool_retry_max: 30\nadmin_listen: 127.0.0.1:9180\ntls_cert: cert.pem\ntls_key: key.pem\nrequest_timeout: 10\nheaders_timeout: 2\nmax_connections: 100\nupstream_timeout: 20\narchive_timeout: 2.5\narchive_connections: 8\nheld_max_bytes: 1024\n',
  );
  t.match(loadProxyConfig(file), {
    spoolMaxBytes: 1000,
    spoolSlowDisk: 'drop',
    spoolRetryMinMs: 500,
    spoolRetryMaxMs: 30000,
    adminListen: { host: '127.0.0.1', port: 9180 },
    tls: { cert: path.join(dir, 'conf', 'cert.pem'), key: path.join(dir, 'conf', 'key.pem') },
    requestTimeoutMs: 10000,
    headersTimeoutMs: 2000,
    maxConnections: 100,
    upstreamTimeoutMs: 20000,
    archiveTimeoutMs: 2500,
    archiveConnections: 8,
    heldMaxBytes: 1024,
  });
  await writeFile(file, 'conditional_max_bytes: 2048\n');
  t.equal(loadProxyConfig(file).heldMaxBytes, 2048, 'conditional_max_bytes, the former name, is still read');
  await writeFile(file, 'conditional_max_bytes: 2048\nheld_max_bytes: 4096\n');
  t.equal(loadProxyConfig(file).heldMaxBytes, 4096, 'held_max_bytes wins over the former name');
  const bad: [string, RegExp][] = [
    ['spool_max_bytes: lots\n', /proxy\.yaml:1: spool_max_bytes must be a number of bytes greater than 0, not "lots"/],
    ['max_connections: 0\n', /proxy\.yaml:1: max_connections must be a whole number greater than 0, not 0/],
    ['headers_timeout: never\n', /proxy\.yaml:1: headers_timeout must be a number of seconds greater than 0, not "never"/],
    ['spool_slow_disk: block\n', /proxy\.yaml:1: spool_slow_disk must be wait or drop, not "block"/],
    ['spool_retry_min: 0\n', /proxy\.yaml:1: spool_retry_min must be a number of seconds greater than 0/],
    ['spool_retry_min: 10\nspool_retry_max: 5\n', /proxy\.yaml:2: spool_retry_max must not be less than spool_retry_min/],
    ['admin_listen: nowhere\n', /proxy\.yaml:1: admin_listen must be host:port \(port 0-65535\) or off/],
    ['tls_cert: cert.pem\n', /proxy\.yaml:1: tls_key is missing \(TLS needs both tls_cert and tls_key\)/],
    ['tls_cert: cert.pem\ntls_key: nokey.pem\n', /proxy\.yaml:2: tls_key file .*nokey\.pem does not exist/],
    ['upstream_timeout: -1\n', /proxy\.yaml:1: upstream_timeout must be a number of seconds greater than 0/],
    ['archive_connections: 0\n', /proxy\.yaml:1: archive_connections must be a whole number greater than 0/],
    ['archive_connections: 2.5\n', /proxy\.yaml:1: archive_connections must be a whole number greater than 0/],
    ['held_max_bytes: none\n', /proxy\.yaml:1: held_max_bytes must be a number of bytes greater than 0/],
    ['conditional_max_bytes: none\n', /proxy\.yaml:1: conditional_max_bytes must be a number of bytes greater than 0/],
    ['workers: 0\n', /proxy\.yaml:1: workers must be auto or a whole number from 1 to 1024, not 0/],
    ['workers: many\n', /proxy\.yaml:1: workers must be auto or a whole number from 1 to 1024, not "many"/],
    ['workers: 1.5\n', /proxy\.yaml:1: workers must be auto or a whole number from 1 to 1024/],
  ];
  for (const [text, re] of bad) {
    await writeFile(file, text);
    t.match(
      errorOf(() => loadProxyConfig(file)),
      re,
      text.trim(),
    );
  }
  await writeFile(file, 'admin_listen: off\n');
  t.equal(loadProxyConfig(file).adminListen, undefined, 'admin_listen: off');
  await writeFile(file, 'workers: 3\n');
  t.equal(loadProxyConfig(file).workers, 3, 'workers: 3');
  await writeFile(file, 'workers: auto\n');
  t.equal(loadProxyConfig(file).workers, defaultWorkers(), 'workers: auto');
  t.same(
    [1, 2, 3, 8, 32].map((cores) => defaultWorkers(cores)),
    [1, 1, 3, 8, 32],
    'auto: one per core above 2 cores, else 1',
  );

  await mkdir(path.join(dir, 'sites'));
  await writeFile(file, 'listen: 0.0.0.0:0\nvhosts: ../sites\nspool: /var/spool/capture\n');
  const d = loadProxyConfig(file);
  t.same(d.listen, { host: '0.0.0.0', port: 0 });
  t.equal(d.vhostsDir, path.join(dir, 'sites'));
  t.equal(d.spoolDir, '/var/spool/capture');

  await writeFile(file, 'listen: 127.0.0.1:8080\nvhost: vhosts/\n');
  t.equal(
    errorOf(() => loadProxyConfig(file)),
    `${file}:2: unknown setting "vhost" (did you mean "vhosts"?)`,
    'a near miss names the key meant',
  );
  await writeFile(file, 'listen: 127.0.0.1:8080\nsites: vhosts/\n');
  t.equal(
    errorOf(() => loadProxyConfig(file)),
    `${file}:2: unknown setting "sites"; known settings: listen, vhosts, spool, spool_max_bytes, spool_slow_disk, spool_retry_min, spool_retry_max, admin_listen, tls_cert, tls_key, request_timeout, headers_timeout, max_connections, upstream_timeout, archive_timeout, archive_connections, held_max_bytes, workers, conditional_max_bytes`,
  );
  await writeFile(file, 'listen: 127.0.0.1:80800\n');
  t.match(
    errorOf(() => loadProxyConfig(file)),
    new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1: listen must be host:port`),
  );
  await writeFile(file, 'listen: 127.0.0.1:8080\nvhosts: nowhere/\n');
  t.match(
    errorOf(() => loadProxyConfig(file)),
    /proxy\.yaml:2: vhosts folder .*nowhere does not exist/,
  );
});

t.test('Excluded: prefix match on path segment boundaries', async (t) => {
  const [v] = parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nExcluded: /search /private/ /a/b\n', 'v.yaml');
  const table: [string, boolean][] = [
    ['/search', true],
    ['/search/', true],
    ['/search/x', true],
    ['/search?q=1', true],
    ['/search/x?q=1', true],
    ['/searchx', false],
    ['/searc', false],
    ['/search.html', false],
    ['/x/search', false],
    ['/', false],
    ['/private', true],
    ['/private/', true],
    ['/private/secret.html', true],
    ['/privateer', false],
    ['/a/b', true],
    ['/a/b/c', true],
    ['/a/bc', false],
    ['/a', false],
    ['/%73earch', true],
    ['/x/../search', true],
    ['/x/%2e%2e/search', true],
    ['//search', true],
    ['/Search', false],
    ['http://a.example/search?q=1', true],
    ['http://a.example/searchx', false],
  ];
  for (const [target, excluded] of table) t.equal(isExcludedPath(v.excluded, target), excluded, `${target} ${excluded ? 'is' : 'is not'} excluded`);
  const [all] = parseVhostText('server_name: a.example\nupstream: http://127.0.0.1:1\nExcluded: /\n', 'v.yaml');
  t.equal(isExcludedPath(all.excluded, '/anything?x'), true, 'Excluded: / excludes everything');
  t.equal(isExcludedPath([], '/search'), false, 'nothing is excluded by default');
});

t.test('PrivateCookies: a list or a space-separated string, [] for none, a bad name is an error; UseCanonicalName, ProxyPassReverse', async (t) => {
  const base = 'server_name: a.example\nupstream: http://127.0.0.1:8081\n';
  const [none] = parseVhostText(base + 'PrivateCookies: []\n', 'a.yaml');
  t.same(none.privateCookies, []);
  t.equal(none.privateCookie, undefined, 'no cookie makes a request private');
  const [two] = parseVhostText(base + 'PrivateCookies: mysid ASPSESSIONID*\nUseCanonicalName: On\nProxyPassReverse: off\n', 'a.yaml');
  t.same(two.privateCookies, ['mysid', 'ASPSESSIONID*']);
  t.ok(two.privateCookie?.test('aspsessionidQQGGRRTT'), 'case-insensitive, * any characters');
  t.notOk(two.privateCookie?.test('mysid2'), 'a name without * matches whole');
  t.equal(two.useCanonicalName, true);
  t.equal(two.proxyPassReverse, false);
  t.match(
    errorOf(() => parseVhostText(base + 'PrivateCookies: [sid, "a;b"]\n', 'a.yaml')),
    /a\.yaml:3: PrivateCookies entries must be cookie names/,
  );
});

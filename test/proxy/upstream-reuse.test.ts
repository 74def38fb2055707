/**
 * A kept-alive connection to the content server that the server closed
 * just as the proxy sent a request on it (the race of every keep-alive
 * timeout): a GET or HEAD, which has no body and may be sent again, is
 * sent once more on a new connection, and the client gets the page, not a
 * 502; a POST is not sent again (its 502 stays), and a GET that fails on
 * a new connection is not retried.
 */
import net from 'node:net';
import t from 'tap';
import { get, listen, startTestProxy, vhostYaml } from './helpers.js';

/**
 * A content server that answers the first request of each connection
 * (200, kept alive) and closes the connection without an answer when a
 * second request comes on it; `requests` counts what it read, by method.
 */
async function closingServer(t: Parameters<typeof listen>[0]) {
  const requests: string[] = [];
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    let served = 0;
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        buf = buf.slice(length);
        requests.push(head.split(' ')[0]);
        if (served++ > 0) return void socket.destroy();
        const body = head.startsWith('HEAD ') ? '' : 'page';
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nKeep-Alive: timeout=60\r\n\r\n${body}`);
      }
    });
    socket.on('error', () => undefined);
  });
  const port = await listen(t, server);
  return { url: `http://127.0.0.1:${port}`, requests, connections: () => connections };
}

t.test('a GET on a connection the content server just closed: sent again on a new one', async (t) => {
  const site = await closingServer(t);
  const { proxy, logs } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }) });
  const first = await get(proxy.url, '/one', 'a.example');
  t.equal(first.status, 200);
  const second = await get(proxy.url, '/two', 'a.example');
  t.equal(second.status, 200, 'the page, not a 502');
  t.equal(second.body.toString(), 'page');
  t.same(site.requests, ['GET', 'GET', 'GET'], 'the second GET sent twice: on the closed connection, then on a new one');
  t.equal(site.connections(), 2);
  const head = await get(proxy.url, '/three', 'a.example', [], 'HEAD');
  t.equal(head.status, 200, 'a HEAD too');
  t.equal(logs.filter((l) => l.status === 502).length, 0, 'no 502 logged');
});

t.test('a POST on such a connection is not sent again: 502', async (t) => {
  const site = await closingServer(t);
  const { proxy } = await startTestProxy(t, { 'a.yaml': vhostYaml({ server_name: 'a.example', upstream: site.url, EnableArchiving: 'Off' }) });
  t.equal((await get(proxy.url, '/one', 'a.example')).status, 200);
  const post = await get(proxy.url, '/form', 'a.example', [['Content-Length', '0']], 'POST');
  t.equal(post.status, 502, 'a POST may have changed something: not repeated');
  t.same(site.requests, ['GET', 'POST'], 'the POST sent once');
});

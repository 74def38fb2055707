/**
 * Loaded first by every page the archive replays (archive/replay/html.ts
 * puts it in, with the page's Memento-Datetime as `data-memento-datetime`;
 * also first in every `<iframe srcdoc>` document).
 *
 * 0. Ways out that no Content-Security-Policy governs in Chromium are cut
 *    before any script of the page runs: WebRTC (`RTCPeerConnection` and
 *    its kin are removed: STUN and TURN would send UDP and TCP to hosts
 *    the page names), connection hints made by script (`rel=preconnect`
 *    and `dns-prefetch` set on a link are left out), speculation rules
 *    made by script (a `speculationrules` script type becomes a data
 *    block), and a `srcdoc` set by script gets this script first. The
 *    sandbox has no `allow-popups` (a new window would load its URL as it
 *    is), so a click on a link to a new window opens it in place, in the
 *    archive. docs/threat-model.md says what a page written to get around
 *    this can still reach.
 * 1. A replayed page runs in a sandbox with an opaque origin, not as the
 *    archive; there `localStorage`, `sessionStorage` and `document.cookie`
 *    throw a SecurityError, and scripts written for the live site stop at
 *    the first use. They get in-memory stand-ins, kept for the life of the
 *    page, so that the page goes on running as it did.
 * 2. The page's clock is its Memento-Datetime: `new Date()`, `Date()` and
 *    `Date.now()` start at the moment of capture and run on from there, so
 *    that a page that prints "today" shows the day it was captured.
 * 3. In a frame (the banner page /web/<ts>/<url>), it tells the parent
 *    which memento it is once loaded (`postMessage` of its address alone),
 *    so that the banner follows the reader's navigation. The parent takes
 *    it as a hint only (a stored page can post anything): it shows nothing
 *    of it, and goes to the /web/ page of that address, which the archive
 *    renders (archive/web/static/web.js).
 * 4. URLs the page's scripts build (`fetch('/api/items.json')`,
 *    `img.src = '/img/' + id`, `XMLHttpRequest`, `setAttribute('src', …)`,
 *    `srcset`, `history.pushState`) are mapped into the archive as the
 *    server maps those in the markup (archive/replay/urls.ts): resolved
 *    against the page's original URL (its URI-R, or its base element's),
 *    then `{base}/<id>/memento/<ts>/<absolute URL>` at the page's own
 *    Memento-Datetime. Archive addresses, and URLs that are not http(s)
 *    (`data:`, `blob:`, `javascript:`), are left alone. The archive's
 *    base comes from this script's own address (`{base}/_static/replay.js`),
 *    the archive id, timestamp and URI-R from the page's address. What a
 *    script reads back (`img.src`, `location`) is the archive address.
 *    `fetch` and `XMLHttpRequest` go without credentials (the archive's
 *    CORS answers are for any origin, `*`, which refuses them).
 */
(function () {
  'use strict';

  var script = document.currentScript;
  try {
    cutWaysOut(script);
  } catch {
    // a browser this cannot patch keeps what its sandbox and the fetch policy leave
  }

  /** Point 0 above: what no fetch directive governs. */
  function cutWaysOut(script) {
    ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'RTCIceTransport', 'RTCSessionDescription', 'RTCIceCandidate'].forEach(function (name) {
      try {
        delete window[name];
      } catch {
        // not configurable here: the page keeps it
      }
    });

    var HINTS = /^(preconnect|dns-prefetch)$/i;
    function withoutHints(value) {
      return String(value)
        .split(/[\t\n\f\r ]+/)
        .filter(function (k) {
          return k && !HINTS.test(k);
        })
        .join(' ');
    }
    function inertType(value) {
      return String(value).trim().toLowerCase() === 'speculationrules' ? 'text/x-archive-speculationrules' : value;
    }
    // The script element of this script, first in a srcdoc document a script sets.
    var self = script
      ? '<script src="' +
        script.src.replace(/"/g, '&quot;') +
        '" data-memento-datetime="' +
        (script.getAttribute('data-memento-datetime') || '') +
        '"></script>'
      : '';
    function withShim(value) {
      var s = String(value);
      return self && s.indexOf(self) !== 0 ? self + s : s;
    }
    // Element interface, attribute, how its value is made safe.
    var FILTERS = [
      ['HTMLLinkElement', 'rel', withoutHints],
      ['HTMLScriptElement', 'type', inertType],
      ['HTMLIFrameElement', 'srcdoc', withShim],
    ];
    FILTERS.forEach(function (f) {
      if (typeof window[f[0]] !== 'function') return;
      var proto = window[f[0]].prototype;
      var d = Object.getOwnPropertyDescriptor(proto, f[1]);
      if (!d || !d.set || !d.configurable) return;
      Object.defineProperty(proto, f[1], {
        configurable: true,
        enumerable: d.enumerable,
        get: d.get,
        set: function (value) {
          d.set.call(this, f[2](value));
        },
      });
    });
    var setAttribute = Element.prototype.setAttribute;
    Element.prototype.setAttribute = function (name, value) {
      var lower = String(name).toLowerCase();
      for (var i = 0; i < FILTERS.length; i++) {
        var f = FILTERS[i];
        if (f[1].toLowerCase() === lower && typeof window[f[0]] === 'function' && this instanceof window[f[0]]) {
          value = f[2](value);
          break;
        }
      }
      return setAttribute.call(this, name, value);
    };
    if (typeof HTMLScriptElement === 'function' && typeof HTMLScriptElement.supports === 'function') {
      var supports = HTMLScriptElement.supports;
      HTMLScriptElement.supports = function (type) {
        return String(type).trim().toLowerCase() === 'speculationrules' ? false : supports.call(HTMLScriptElement, type);
      };
    }

    // A link to a new window: in place (a click the reader made; the sandbox lets no page open a window).
    document.addEventListener('click', function (e) {
      if (!e.isTrusted || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      var a = e.target && e.target.closest ? e.target.closest('a[href], area[href]') : null;
      if (!a || !(a instanceof HTMLAnchorElement || a instanceof HTMLAreaElement) || a.hasAttribute('download')) return;
      var target = a.getAttribute('target');
      if (target === null) {
        var base = document.querySelector('base[target]');
        target = base ? base.getAttribute('target') : '';
      }
      target = String(target).trim();
      var lower = target.toLowerCase();
      if (!target || lower === '_self' || lower === '_parent' || lower === '_top' || target === window.name) return;
      // A frame of this page by that name is navigated as the page meant.
      var frames = document.querySelectorAll('iframe[name], frame[name]');
      for (var i = 0; i < frames.length; i++) if (frames[i].getAttribute('name') === target) return;
      e.preventDefault();
      location.href = a.href;
    });
  }

  function memoryStorage() {
    var data = new Map();
    return {
      getItem: function (key) {
        key = String(key);
        return data.has(key) ? data.get(key) : null;
      },
      setItem: function (key, value) {
        data.set(String(key), String(value));
      },
      removeItem: function (key) {
        data.delete(String(key));
      },
      clear: function () {
        data.clear();
      },
      key: function (i) {
        var keys = Array.from(data.keys());
        return i >= 0 && i < keys.length ? keys[i] : null;
      },
      get length() {
        return data.size;
      },
    };
  }

  ['localStorage', 'sessionStorage'].forEach(function (name) {
    try {
      void window[name];
    } catch {
      try {
        Object.defineProperty(window, name, { value: memoryStorage(), configurable: true });
      } catch {
        // not replaceable here: the page sees the error, as it would without this script
      }
    }
  });

  try {
    void document.cookie;
  } catch {
    var jar = new Map();
    try {
      Object.defineProperty(document, 'cookie', {
        configurable: true,
        get: function () {
          return Array.from(jar, function (e) {
            return e[0] + '=' + e[1];
          }).join('; ');
        },
        set: function (value) {
          var pair = String(value).split(';')[0];
          var eq = pair.indexOf('=');
          if (eq > 0) jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
        },
      });
    } catch {
      // not replaceable here
    }
  }

  if (window.parent !== window) {
    var tell = function () {
      try {
        window.parent.postMessage({ type: 'memento-archive:load', href: location.href }, '*');
      } catch {
        // no parent to tell
      }
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', tell);
    else tell();
  }

  try {
    mapScriptUrls(script);
  } catch {
    // a page or browser this cannot patch replays as it would without it
  }

  var ts = script && script.getAttribute('data-memento-datetime');
  if (!ts || !/^\d{14}$/.test(ts)) return;
  var RealDate = Date;
  var capturedAt = RealDate.UTC(+ts.slice(0, 4), +ts.slice(4, 6) - 1, +ts.slice(6, 8), +ts.slice(8, 10), +ts.slice(10, 12), +ts.slice(12, 14));
  var loadedAt = RealDate.now();
  function now() {
    return capturedAt + (RealDate.now() - loadedAt);
  }
  function ArchiveDate() {
    // Called without new: the date as a string, as Date() does.
    if (!new.target) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, arguments.length ? Array.from(arguments) : [now()], new.target);
  }
  ArchiveDate.prototype = RealDate.prototype;
  ArchiveDate.now = now;
  ArchiveDate.parse = RealDate.parse;
  ArchiveDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, 'constructor', { value: ArchiveDate, writable: true, configurable: true });
  window.Date = ArchiveDate;

  /** Patches the ways scripts name URLs (point 4 above); does nothing when the page's address is not a Memento's. */
  function mapScriptUrls(script) {
    var self = '/_static/replay.js';
    var src = script && script.src;
    if (!src || src.slice(-self.length) !== self) return;
    var base = src.slice(0, -self.length);
    var archiveOrigin = new URL(base).origin;
    // {base}/<id>/memento/<ts>[modifier]/ (any archive, any time): what follows is the URI-R.
    var memento = new RegExp('^' + base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '/([^/?#]+)/memento/(\\d{1,14})(?:[a-z]{2}_)?/');
    var here = memento.exec(location.href);
    if (!here || here[2].length !== 14) return;
    var prefix = base + '/' + here[1] + '/memento/' + here[2] + '/';
    var uriR = location.href.slice(here[0].length).split('#')[0];

    /** The URI-R in an archive address, or null. */
    function original(url) {
      var m = memento.exec(url);
      return m ? url.slice(m[0].length) : null;
    }
    /** What relative URLs resolve against: the page's base element or address, as the live page had it. */
    function pageBase() {
      return original(document.baseURI) || original(location.href) || uriR;
    }
    /** `url` (a string or URL object) as an archive address, or as it was when it stays. */
    function toArchive(url) {
      var s = String(url);
      if (!s.trim() || s.trim().charAt(0) === '#') return url;
      var abs;
      try {
        abs = new URL(s, pageBase());
      } catch {
        return url;
      }
      if (abs.protocol !== 'http:' && abs.protocol !== 'https:') return url;
      if (abs.origin === archiveOrigin) {
        if (memento.test(abs.href) || abs.href.indexOf(base + '/_static/') === 0) return url;
        // A path resolved against the archive address (`new URL('/x', location.href)`, a Request): the site's own.
        abs = new URL(abs.pathname + abs.search + abs.hash, pageBase());
      }
      return prefix + abs.href;
    }
    /** A `srcset` value with each candidate's URL mapped (HTML "parse a srcset attribute", descriptors kept). */
    function srcsetToArchive(value) {
      var s = String(value);
      var out = '';
      var i = 0;
      while (i < s.length) {
        var sep = /^[\s,]*/.exec(s.slice(i))[0];
        out += sep;
        i += sep.length;
        if (i >= s.length) break;
        var url = /^\S*/.exec(s.slice(i))[0];
        var commas = /,*$/.exec(url)[0];
        url = url.slice(0, url.length - commas.length);
        i += url.length + commas.length;
        out += toArchive(url) + commas;
        if (commas) continue;
        var next = s.indexOf(',', i);
        if (next < 0) next = s.length;
        out += s.slice(i, next);
        i = next;
      }
      return out;
    }

    // Requests go without credentials: the archive answers CORS with `*`, which a request with
    // credentials may not read, and the page (opaque origin) has no cookies of the archive to send.
    var realFetch = window.fetch;
    if (realFetch) {
      window.fetch = function (input, init) {
        if (typeof Request === 'function' && input instanceof Request) {
          var to = toArchive(input.url);
          try {
            if (to !== input.url) input = new Request(to, input);
            if (input.credentials === 'include') input = new Request(input, { credentials: 'same-origin' });
          } catch {
            // a Request this cannot copy (one with a body stream) goes as it is
          }
        } else input = toArchive(input);
        if (init && init.credentials === 'include') init = Object.assign({}, init, { credentials: 'same-origin' });
        return realFetch.call(window, input, init);
      };
    }

    var open = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function (method, url) {
      var args = Array.prototype.slice.call(arguments);
      if (args.length > 1) args[1] = toArchive(url);
      return open.apply(this, args);
    };
    var withCredentials = Object.getOwnPropertyDescriptor(XMLHttpRequest.prototype, 'withCredentials');
    if (withCredentials && withCredentials.set && withCredentials.configurable) {
      Object.defineProperty(XMLHttpRequest.prototype, 'withCredentials', {
        configurable: true,
        enumerable: withCredentials.enumerable,
        get: withCredentials.get,
        set: function () {
          withCredentials.set.call(this, false);
        },
      });
    }

    // Element interface, IDL attribute, content attribute, whether it is a srcset.
    var URL_ATTRIBUTES = [
      ['HTMLImageElement', 'src', 'src'],
      ['HTMLImageElement', 'srcset', 'srcset', true],
      ['HTMLSourceElement', 'src', 'src'],
      ['HTMLSourceElement', 'srcset', 'srcset', true],
      ['HTMLScriptElement', 'src', 'src'],
      ['HTMLLinkElement', 'href', 'href'],
      ['HTMLLinkElement', 'imageSrcset', 'imagesrcset', true],
      ['HTMLIFrameElement', 'src', 'src'],
      ['HTMLAnchorElement', 'href', 'href'],
      ['HTMLAreaElement', 'href', 'href'],
      ['HTMLMediaElement', 'src', 'src'],
      ['HTMLVideoElement', 'poster', 'poster'],
      ['HTMLTrackElement', 'src', 'src'],
      ['HTMLEmbedElement', 'src', 'src'],
      ['HTMLObjectElement', 'data', 'data'],
      ['HTMLFormElement', 'action', 'action'],
    ].filter(function (e) {
      return typeof window[e[0]] === 'function';
    });
    URL_ATTRIBUTES.forEach(function (e) {
      var proto = window[e[0]].prototype;
      var d = Object.getOwnPropertyDescriptor(proto, e[1]);
      if (!d || !d.set || !d.configurable) return;
      var map = e[3] ? srcsetToArchive : toArchive;
      Object.defineProperty(proto, e[1], {
        configurable: true,
        enumerable: d.enumerable,
        get: d.get,
        set: function (value) {
          d.set.call(this, map(value));
        },
      });
    });

    var setAttribute = Element.prototype.setAttribute;
    Element.prototype.setAttribute = function (name, value) {
      var lower = String(name).toLowerCase();
      for (var i = 0; i < URL_ATTRIBUTES.length; i++) {
        var e = URL_ATTRIBUTES[i];
        if (e[2] === lower && this instanceof window[e[0]]) {
          value = e[3] ? srcsetToArchive(value) : toArchive(value);
          break;
        }
      }
      return setAttribute.call(this, name, value);
    };

    // The address a page moves to stays in the archive, at the page's time.
    ['pushState', 'replaceState'].forEach(function (name) {
      var real = History.prototype[name];
      History.prototype[name] = function (state, title, url) {
        if (url === undefined || url === null) return real.apply(this, arguments);
        return real.call(this, state, title, toArchive(url));
      };
    });
  }
})();

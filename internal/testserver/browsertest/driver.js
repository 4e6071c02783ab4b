// The Node half of browsertest: launches Chromium through playwright-core
// and runs commands read from stdin, one JSON object a line, answering each
// on stdout with one JSON line. Commands run one at a time, in order.
//
//   in:  {"id": 1, "op": "goto", "page": "p1", "args": {"url": "..."}}
//   out: {"id": 1, "ok": true, "result": ..., "events": [...]}
//        {"id": 1, "ok": false, "error": "...", "events": [...]}
//
// events are what the page did since the last answer about it: console
// errors and warnings, uncaught exceptions, CSP violations, dialogs (which
// are dismissed), crashes. The Go side decides which of them fail a test.
//
// argv: executablePath, then the JSON list of Chromium flags.
'use strict';

const readline = require('readline');
const { chromium } = require('playwright-core');

const [executablePath, argsJSON] = process.argv.slice(2);

let browser;
const pages = new Map(); // id -> {context, page, events}

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// Every page reports CSP violations through this binding; the listener is
// added by an init script, which Chromium runs outside the page's CSP.
const cspScript = `
document.addEventListener('securitypolicyviolation', (e) => {
  window.__browsertestCSP({
    directive: e.violatedDirective, blocked: e.blockedURI,
    sample: e.sample, source: e.sourceFile, line: e.lineNumber,
  });
});`;

async function newPage(id, args) {
  const context = await browser.newContext({
    viewport: { width: args.width || 1280, height: args.height || 800 },
    timezoneId: args.timezone || 'UTC',
    locale: 'en-GB',
  });
  context.setDefaultTimeout(args.timeoutMs || 10000);
  // A short step timeout is for failing a wait quickly; loading a page
  // on a loaded machine still gets the default's 10 s.
  context.setDefaultNavigationTimeout(Math.max(args.timeoutMs || 10000, 10000));
  const entry = { context, page: null, events: [] };
  const ev = (kind, text, extra) => entry.events.push({ kind, text, url: entry.page ? entry.page.url() : '', ...extra });
  await context.exposeBinding('__browsertestCSP', (source, v) => {
    ev('csp', `CSP violation: ${v.directive} blocked ${v.blocked || '(inline)'} ${v.sample ? JSON.stringify(v.sample) : ''} at ${v.source}:${v.line}`);
  });
  await context.addInitScript(cspScript);
  const page = await context.newPage();
  entry.page = page;
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') {
      const loc = m.location();
      ev('console.' + m.type(), m.text(), { source: loc && loc.url ? `${loc.url}:${loc.lineNumber}` : '' });
    }
  });
  page.on('pageerror', (e) => ev('pageerror', String(e && e.stack ? e.stack : e)));
  page.on('dialog', (d) => {
    ev('dialog', `${d.type()} dialog: ${JSON.stringify(d.message())}`);
    d.dismiss().catch(() => {});
  });
  page.on('crash', () => ev('crash', 'the page crashed'));
  pages.set(id, entry);
  return null;
}

function get(id) {
  const e = pages.get(id);
  if (!e) throw new Error(`no page ${id}`);
  return e;
}

// status: the HTTP status of a navigation's final response, 0 if none
// (a navigation to the same document, or about:blank).
const status = (resp) => (resp ? resp.status() : 0);

const ops = {
  async goto(p, a) {
    return status(await p.goto(a.url, { waitUntil: a.waitUntil || 'load' }));
  },
  // clickNav clicks and waits for the navigation the click starts (a form
  // submission, a link), following redirects: its status is the last one's.
  async clickNav(p, a) {
    const [resp] = await Promise.all([
      p.waitForNavigation({ waitUntil: a.waitUntil || 'load' }),
      p.locator(a.selector).first().click(),
    ]);
    return status(resp);
  },
  async click(p, a) {
    await p.locator(a.selector).first().click();
    return null;
  },
  async fill(p, a) {
    await p.locator(a.selector).first().fill(a.value);
    return null;
  },
  // text: the first match's rendered text (innerText), waiting for it.
  async text(p, a) {
    return p.locator(a.selector).first().innerText();
  },
  async texts(p, a) {
    return p.locator(a.selector).allInnerTexts();
  },
  async html(p, a) {
    return p.locator(a.selector).first().innerHTML();
  },
  // attr: the first match's attribute, null when it has none.
  async attr(p, a) {
    return p.locator(a.selector).first().getAttribute(a.name);
  },
  async count(p, a) {
    return p.locator(a.selector).count();
  },
  async visible(p, a) {
    return p.locator(a.selector).first().isVisible();
  },
  async waitFor(p, a) {
    await p.locator(a.selector).first().waitFor({ state: a.state || 'visible', timeout: a.timeoutMs });
    return null;
  },
  async screenshot(p, a) {
    await p.screenshot({ path: a.path, fullPage: a.fullPage !== false, timeout: a.timeoutMs });
    return a.path;
  },
  // evaluate: expr is a function's source; it is called with arg and its
  // result (JSON-serialisable) returned.
  async evaluate(p, a) {
    return p.evaluate(`(${a.expr})(${JSON.stringify(a.arg === undefined ? null : a.arg)})`);
  },
  async url(p) {
    return p.url();
  },
  async content(p) {
    return p.content();
  },
  async events() {
    return null;
  },
  async closePage(p, a, id) {
    await get(id).context.close();
    return null;
  },
};

async function handle(cmd) {
  if (cmd.op === 'newPage') {
    await newPage(cmd.page, cmd.args || {});
    return null;
  }
  const fn = ops[cmd.op];
  if (!fn) throw new Error(`unknown op ${cmd.op}`);
  return fn(get(cmd.page).page, cmd.args || {}, cmd.page);
}

async function main() {
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: JSON.parse(argsJSON),
    timeout: 60000,
  });
  send({ id: 0, ok: true, result: browser.version() });

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(async () => {
      let cmd;
      try {
        cmd = JSON.parse(line);
      } catch (e) {
        send({ id: -1, ok: false, error: `bad command: ${e.message}` });
        return;
      }
      const answer = { id: cmd.id };
      try {
        answer.result = await handle(cmd);
        answer.ok = true;
      } catch (e) {
        answer.ok = false;
        answer.error = String(e && e.message ? e.message : e);
      }
      const entry = pages.get(cmd.page);
      if (entry) {
        answer.events = entry.events;
        entry.events = [];
        if (cmd.op === 'closePage') pages.delete(cmd.page);
      }
      send(answer);
    });
  });
  rl.on('close', () => {
    queue.then(() => browser.close()).then(() => process.exit(0), () => process.exit(1));
  });
}

main().catch((e) => {
  process.stderr.write(`browsertest driver: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

// run.js is the Node half of package sqlcheck (see sqlcheck.go).
//
// Usage: node run.js DATA_DIR RESULT_FILE < statements.json
//
// stdin holds a JSON array of SQL strings. They run in order in one chDB
// Session rooted at DATA_DIR, each on its own, so one failure does not stop
// the rest. The results go to RESULT_FILE rather than stdout because the
// embedded engine is native code that may write to fd 1 itself.
'use strict';

const fs = require('fs');

const [dataDir, resultFile] = process.argv.slice(2);
// Read stdin completely before the engine loads, so nothing in it can.
const statements = JSON.parse(fs.readFileSync(0, 'utf8'));

const { Session } = require('chdb');
const session = new Session(dataDir);

function run(sql) {
  // chDB treats an empty query as a successful no-op; a blank statement is
  // always a bug in the caller, so it must not pass.
  if (!sql.trim()) return { ok: false, error: 'empty statement' };
  try {
    return { ok: true, output: session.query(sql, 'CSV') };
  } catch (e) {
    return { ok: false, error: String((e && e.message) || e) };
  }
}

try {
  // Any failure here is not the caller's: let it crash node with a trace.
  const version = session.query('SELECT version()', 'TabSeparated').trim();
  const results = statements.map(run);
  fs.writeFileSync(resultFile, JSON.stringify({ version, results }));
} finally {
  session.close();
}

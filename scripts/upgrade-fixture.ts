// Regenerates an upgrade fixture (docs/upgrades.md): the orchestrator and relay databases as the
// programs of an OLDER commit leave them, dumped with pg_dump into test/fixtures/upgrade/.
//
//   node scripts/upgrade-fixture.ts 2ca6415
//
// It checks the commit out in a temporary worktree (git worktree add), links this checkout's
// node_modules into it, copies test/fixtures/upgrade/populate.ts and restore.ts there (so the
// data is made by that commit's own code and migrations, not by anything added since), runs it
// against the PostgreSQL in SVC_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// and removes the worktree. Writes <commit>.sql, <commit>-relay.sql and <commit>.json.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const commit = process.argv[2];
if (commit === undefined || !/^[0-9a-f]{7,40}$/.test(commit)) {
  process.stderr.write('usage: node scripts/upgrade-fixture.ts <commit> (7 to 40 hex digits)\n');
  process.exit(2);
}
const name = execFileSync('git', ['rev-parse', '--short=7', `${commit}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
const worktree = join(tmpdir(), `svc-upgrade-fixture-${name}-${process.pid}`);
const out = join(ROOT, 'test/fixtures/upgrade');
execFileSync('git', ['worktree', 'add', '--detach', worktree, name], { cwd: ROOT, stdio: 'inherit' });
try {
  if (!existsSync(join(worktree, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(worktree, 'node_modules'));
  mkdirSync(join(worktree, 'test/fixtures/upgrade'), { recursive: true });
  for (const file of ['populate.ts', 'restore.ts']) copyFileSync(join(out, file), join(worktree, 'test/fixtures/upgrade', file));
  execFileSync(process.execPath, ['test/fixtures/upgrade/populate.ts', '--name', name, '--out', out], { cwd: worktree, stdio: 'inherit', env: { ...process.env, SVC_TEST_DIST: '' } });
} finally {
  execFileSync('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT, stdio: 'inherit' });
}

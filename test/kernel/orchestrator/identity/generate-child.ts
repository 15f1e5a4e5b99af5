// Child process for the convergence test: one "node" generating the first key at a given time.
// argv: <database url> <master key hex> <start at epoch ms>
import { createDatabase } from '../../../../kernel/services/db/index.ts';
import { boundDbCustody, masterKeys, silent } from './fixtures.ts';

const [url, keyHex, startAt] = process.argv.slice(2) as [string, string, string];
const pool = await createDatabase({ url, logger: silent, maxPoolSize: 2 });
try {
  const custody = boundDbCustody(pool, masterKeys(Buffer.from(keyHex, 'hex')));
  const wait = Number(startAt) - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const key = await custody.generate();
  process.stdout.write(JSON.stringify({ kid: key.kid, created: key.created }) + '\n');
} finally {
  await pool.end();
}

// A single-machine install may start without SVC_SECRET_KEY: the orchestrator then keeps a
// generated master key in its data directory (never in the database) and says so. Production
// installs set SVC_SECRET_KEY or SVC_SECRET_KEY_FILE.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parseMasterKey } from '../services/crypto/sealing.ts';

export const MASTER_KEY_FILE = 'master.key';

export async function dataDirMasterKey(dataDir: string, logger: Logger): Promise<Buffer> {
  const path = join(dataDir, MASTER_KEY_FILE);
  try {
    return parseMasterKey(await readFile(path, 'utf8'), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  // `wx`: two processes racing on first start must not overwrite each other's key.
  try {
    await writeFile(path, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return parseMasterKey(await readFile(path, 'utf8'), path);
    throw error;
  }
  logger.warn({ path }, 'no SVC_SECRET_KEY set: generated a master key in the data directory; set SVC_SECRET_KEY (or SVC_SECRET_KEY_FILE) in production');
  return key;
}

// The master keys from config: current (`secrets.key` or `secrets.keyFile`) and, during
// rotation, the previous one (`secrets.keyOld` or `secrets.keyFileOld`).
import { readFile } from 'node:fs/promises';
import type { SvcConfig } from '../../../schemas/config.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { parseMasterKey, type NamedKey } from './sealing.ts';

export interface MasterKeys {
  current?: Buffer;
  old?: Buffer;
  /** Current first, then old: the order openWithAny should try them in. */
  all: NamedKey[];
}

async function one(value: string | undefined, file: string | undefined, names: [string, string]): Promise<Buffer | undefined> {
  const [valueName, fileName] = names;
  if (value !== undefined && file !== undefined) {
    throw new InputError('SVC_ERR_CONFIG_INVALID', `set only one of ${valueName} and ${fileName}`);
  }
  if (value !== undefined) return parseMasterKey(value, valueName);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError('SVC_ERR_CRYPTO_KEY_FILE_UNREADABLE', `${fileName} ${file} could not be read: ${messageOf(error)}`, { cause: error });
  }
  return parseMasterKey(text, `${fileName} ${file}`);
}

export async function loadMasterKeys(secrets: SvcConfig['secrets']): Promise<MasterKeys> {
  const current = await one(secrets.key, secrets.keyFile, ['SVC_SECRET_KEY (secrets.key)', 'SVC_SECRET_KEY_FILE (secrets.keyFile)']);
  const old = await one(secrets.keyOld, secrets.keyFileOld, ['SVC_SECRET_KEY_OLD (secrets.keyOld)', 'SVC_SECRET_KEY_FILE_OLD (secrets.keyFileOld)']);
  if (old && !current) {
    throw new InputError('SVC_ERR_CONFIG_INVALID', 'SVC_SECRET_KEY_OLD is set without SVC_SECRET_KEY: set the new master key too');
  }
  const all: NamedKey[] = [];
  const keys: MasterKeys = { all };
  if (current) {
    keys.current = current;
    all.push({ name: 'current', key: current });
  }
  if (old) {
    keys.old = old;
    // The same key twice is harmless but says the rotation was not set up; keep one.
    if (!current?.equals(old)) all.push({ name: 'old', key: old });
  }
  return keys;
}

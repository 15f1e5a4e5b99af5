// Find a program on PATH without a shell (`command -v` needs one).
import { access, constants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';

export async function findExecutable(name: string, pathValue: string | undefined = process.env['PATH']): Promise<string | null> {
  const candidates = isAbsolute(name) ? [name] : (pathValue ?? '').split(delimiter).filter((d) => d !== '').map((d) => join(d, name));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return null;
}

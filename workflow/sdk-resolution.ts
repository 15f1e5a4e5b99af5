// Workflow files import `svc/sdk` (or `svc`). The repository being compiled may have no
// node_modules at all (a fresh clone, a temp dir in tests), and even when it has, definitions
// must share THIS process's SDK instance so the compiler and the loaded workflows agree. A
// synchronous in-thread resolution hook (`module.registerHooks`, Node >= 22.15) maps both
// specifiers to the SDK entry next to the running CLI: `sdk/index.ts` from source,
// `dist/sdk/index.js` when compiled.
import { registerHooks } from 'node:module';

const SDK_SPECIFIERS: ReadonlySet<string> = new Set(['svc', 'svc/sdk']);

/** URL of the SDK entry of the package this module belongs to. */
export function sdkEntryUrl(): string {
  // workflow/sdk-resolution.(ts|js) → <root>/sdk/index.ts, or dist/workflow → dist/sdk/index.js.
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? '../sdk/index.ts' : '../sdk/index.js', import.meta.url).href;
}

let registered = false;

/** Install the `svc/sdk` mapping once per process (idempotent). */
export function registerSdkResolution(): void {
  if (registered) return;
  registered = true;
  const url = sdkEntryUrl();
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (SDK_SPECIFIERS.has(specifier)) return { url, shortCircuit: true };
      return nextResolve(specifier, context);
    },
  });
}

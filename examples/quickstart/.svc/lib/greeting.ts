// The code this example's CI checks: a tiny module with a unit test and a lint rule.
// Files under .svc/ are part of the workflows' content hash, so editing this file (or anything
// else under .svc/) makes the next push build the workflows again.

/** `Hello, <name>!` with the name trimmed; a blank name greets the world. */
export function greet(name: string): string {
  const who = name.trim() === '' ? 'world' : name.trim();
  return `Hello, ${who}!`;
}

// Tokenizes .troupe files with vscode-textmate (the engine of VS Code) and
// the grammar ../troupe.tmLanguage.json; prints one line per token:
// `line:start-end scope.innermost text`.
// Usage: node tokenize.mjs FILE...
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const here = dirname(fileURLToPath(import.meta.url));
const wasm = readFileSync(join(dirname(require.resolve('vscode-oniguruma')), 'onig.wasm')).buffer;
await oniguruma.loadWASM(wasm);

const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async (scopeName) => {
    if (scopeName !== 'source.troupe') return null;
    const path = join(here, '..', 'troupe.tmLanguage.json');
    return vsctm.parseRawGrammar(readFileSync(path, 'utf8'), path);
  },
});

const grammar = await registry.loadGrammar('source.troupe');
if (!grammar) throw new Error('the grammar did not load');
for (const file of process.argv.slice(2)) {
  const lines = readFileSync(file, 'utf8').split('\n');
  let state = vsctm.INITIAL;
  const out = [];
  lines.forEach((line, i) => {
    const r = grammar.tokenizeLine(line, state);
    for (const t of r.tokens) {
      const text = line.slice(t.startIndex, t.endIndex);
      if (text.trim() === '') continue;
      const scope = t.scopes[t.scopes.length - 1];
      out.push(`${i}:${t.startIndex}-${t.endIndex} ${scope} ${text}`);
    }
    state = r.ruleStack;
  });
  process.stdout.write(out.join('\n') + '\n');
}

// The troupe extension: starts `troupe lsp` for .troupe files and adds two
// commands that show the projection of the lifeline under the cursor and the
// chart of the workflow (the server's `troupe.project` / `troupe.chart`).
'use strict';
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

async function show(command) {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'troupe' || !client) return;
  const pos = editor.selection.active;
  try {
    const result = await client.sendRequest('workspace/executeCommand', {
      command,
      arguments: [editor.document.uri.toString(), { line: pos.line, character: pos.character }],
    });
    const doc = await vscode.workspace.openTextDocument({
      content: result.text,
      language: result.language === 'mermaid' ? 'mermaid' : 'plaintext',
    });
    await vscode.window.showTextDocument(doc, vscode.ViewColumn.Beside, true);
  } catch (e) {
    vscode.window.showErrorMessage(`troupe: ${e.message || e}`);
  }
}

function activate(context) {
  const command = vscode.workspace.getConfiguration('troupe').get('server.path') || 'troupe';
  client = new LanguageClient(
    'troupe',
    'troupe',
    { command, args: ['lsp'] },
    {
      documentSelector: [{ scheme: 'file', language: 'troupe' }, { scheme: 'untitled', language: 'troupe' }],
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/*.json') },
    },
  );
  context.subscriptions.push(
    vscode.commands.registerCommand('troupe.showProjection', () => show('troupe.project')),
    vscode.commands.registerCommand('troupe.showChart', () => show('troupe.chart')),
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };

// Starts `trainwreck lsp` for logs and entries, and adds the commands that diagnose selected text.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

// Commands whose result is a Markdown report to show and copy.
const REPORTS = new Set(["trainwreck.reportMarkdown", "trainwreck.diagnoseRange", "trainwreck.diagnoseText"]);

async function showReport(markdown: unknown): Promise<void> {
  if (typeof markdown !== "string" || markdown.length === 0) {
    void vscode.window.showWarningMessage("Trainwreck: no report for this document yet.");
    return;
  }
  await vscode.env.clipboard.writeText(markdown);
  const document = await vscode.workspace.openTextDocument({ language: "markdown", content: markdown });
  await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  void vscode.window.showInformationMessage("Trainwreck: the report is on the clipboard as Markdown.");
}

async function diagnoseText(text: string): Promise<void> {
  if (client === undefined) {
    void vscode.window.showErrorMessage("Trainwreck: the language server is not running.");
    return;
  }
  const markdown: unknown = await client.sendRequest("workspace/executeCommand", {
    command: "trainwreck.diagnoseText",
    arguments: [text],
  });
  await showReport(markdown);
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) {
    void vscode.window.showWarningMessage("Trainwreck: open a file and select the log lines first.");
    return;
  }
  const text = editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection);
  await diagnoseText(text);
}

// VS Code gives extensions no access to a terminal's buffer: the terminal's selection (or, when
// nothing is selected, all of its scrollback) is copied through the clipboard, which is then restored.
async function diagnoseTerminal(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (terminal === undefined) {
    void vscode.window.showWarningMessage("Trainwreck: no terminal is open.");
    return;
  }
  terminal.show(false);
  const saved = await vscode.env.clipboard.readText();
  await vscode.env.clipboard.writeText("");
  await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
  let text = await vscode.env.clipboard.readText();
  if (text.length === 0) {
    await vscode.commands.executeCommand("workbench.action.terminal.selectAll");
    await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
    await vscode.commands.executeCommand("workbench.action.terminal.clearSelection");
    text = await vscode.env.clipboard.readText();
  }
  await vscode.env.clipboard.writeText(saved);
  if (text.length === 0) {
    void vscode.window.showWarningMessage("Trainwreck: the terminal shows no text to diagnose.");
    return;
  }
  await diagnoseText(text);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const configured = vscode.workspace.getConfiguration("trainwreck").get<string[]>("command") ?? [];
  const [command, ...args] = configured.length > 0 ? configured : ["trainwreck", "lsp"];
  const serverOptions: ServerOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions: LanguageClientOptions = {
    // Every file is synchronised so that "Diagnose this selection" works anywhere; the server
    // diagnoses logs and checks entries, and leaves other files alone.
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    middleware: {
      executeCommand: async (name, commandArgs, next) => {
        const result: unknown = await next(name, commandArgs);
        if (REPORTS.has(name)) {
          await showReport(result);
        }
        return result;
      },
    },
  };
  client = new LanguageClient("trainwreck", "Trainwreck", serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.commands.registerCommand("trainwreck.diagnoseSelection", diagnoseSelection),
    vscode.commands.registerCommand("trainwreck.diagnoseTerminal", diagnoseTerminal),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  if (client !== undefined) {
    await client.stop();
    client = undefined;
  }
}

-- Trainwreck for Neovim's built-in LSP client (Neovim 0.7 or later).
-- Copy this file to ~/.config/nvim/lua/trainwreck.lua and add to init.lua:
--   require("trainwreck").setup()
-- or, to run the server from a checkout: require("trainwreck").setup({ cmd = { "python3", "-m", "generator", "lsp" } })
local M = {}

M.patterns = { "*.log", "*.out", "*.err", "*.txt", "*/entries/*.yaml", "*/hubs/*.yaml", "*/tags.yaml" }

local clients = {}

-- The project folder (the one with site.yaml) for entries, the file's folder for a log.
local function root_of(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  local found = vim.fn.findfile("site.yaml", dir .. ";")
  if found ~= "" then
    return vim.fn.fnamemodify(found, ":p:h")
  end
  return dir
end

function M.attach(buf, opts)
  local path = vim.api.nvim_buf_get_name(buf)
  local root = root_of(path)
  if vim.lsp.start ~= nil then
    -- Neovim 0.8 and later reuse one client per root themselves.
    vim.lsp.start({ name = "trainwreck", cmd = opts.cmd, root_dir = root }, { bufnr = buf })
    return
  end
  local id = clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client({
      name = "trainwreck",
      cmd = opts.cmd,
      root_dir = root,
      workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    })
    clients[root] = id
  end
  if id ~= nil then
    vim.lsp.buf_attach_client(buf, id)
  end
end

function M.setup(opts)
  opts = vim.tbl_extend("keep", opts or {}, { cmd = { "trainwreck", "lsp" } })
  local group = vim.api.nvim_create_augroup("trainwreck", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = M.patterns,
    callback = function(args)
      M.attach(args.buf, opts)
    end,
  })
  -- :TrainwreckDiagnose diagnoses the current buffer as a log, whatever its name.
  vim.api.nvim_create_user_command("TrainwreckDiagnose", function()
    local buf = vim.api.nvim_get_current_buf()
    M.attach(buf, opts)
    vim.defer_fn(function()
      vim.lsp.buf_request(buf, "workspace/executeCommand", {
        command = "trainwreck.diagnoseDocument",
        arguments = { vim.uri_from_bufnr(buf) },
      }, function() end)
    end, 500)
  end, {})
end

return M

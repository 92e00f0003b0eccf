-- Neovim 0.7+ configuration for troupe, as docs/editors.md describes it,
-- plus the scripted steps of the screenshot (when TROUPE_SCREENSHOT is set):
-- open a file, wait for diagnostics, hover a variable.
local rt = assert(os.getenv('TROUPE_NVIM_RUNTIME'), 'TROUPE_NVIM_RUNTIME') -- has parser/ and queries/
vim.opt.runtimepath:prepend(rt)
vim.opt.termguicolors = true
vim.opt.number = true
vim.opt.signcolumn = 'yes'
vim.opt.laststatus = 2
vim.cmd('syntax off')

vim.filetype = vim.filetype or {}
vim.cmd('autocmd BufRead,BufNewFile *.troupe setfiletype troupe')

-- Captures that Neovim 0.7 maps to no highlight group by default.
local hl_map = vim.treesitter.highlighter.hl_map
hl_map['module'] = 'Type'
hl_map['variable'] = 'Identifier'
hl_map['keyword.operator'] = 'Operator'
vim.api.nvim_set_hl(0, 'Identifier', { fg = '#9cdcfe' })
vim.api.nvim_set_hl(0, 'Type', { fg = '#4ec9b0' })
vim.api.nvim_set_hl(0, 'Keyword', { fg = '#c586c0' })
vim.api.nvim_set_hl(0, 'Conditional', { fg = '#c586c0' })
vim.api.nvim_set_hl(0, 'Function', { fg = '#dcdcaa' })
vim.api.nvim_set_hl(0, 'String', { fg = '#ce9178' })
vim.api.nvim_set_hl(0, 'Comment', { fg = '#6a9955' })
vim.api.nvim_set_hl(0, 'Constant', { fg = '#4fc1ff' })
vim.api.nvim_set_hl(0, 'Number', { fg = '#b5cea8' })
vim.api.nvim_set_hl(0, 'Normal', { fg = '#d4d4d4', bg = '#1e1e1e' })
vim.api.nvim_set_hl(0, 'NormalFloat', { fg = '#d4d4d4', bg = '#303030' })
vim.api.nvim_set_hl(0, 'LineNr', { fg = '#707070' })
vim.api.nvim_set_hl(0, 'SignColumn', { bg = '#1e1e1e' })

vim.diagnostic.config({ virtual_text = true, signs = true, underline = true })

vim.api.nvim_create_autocmd('FileType', {
  pattern = 'troupe',
  callback = function(args)
    pcall(function()
      vim.treesitter.highlighter.new(vim.treesitter.get_parser(args.buf, 'troupe'))
    end)
    local id = vim.lsp.start_client({
      name = 'troupe',
      cmd = { os.getenv('TROUPE_BIN') or 'troupe', 'lsp' },
      root_dir = vim.fn.fnamemodify(args.file, ':p:h'),
    })
    if id then vim.lsp.buf_attach_client(args.buf, id) end
  end,
})

if os.getenv('TROUPE_SCREENSHOT') then
  vim.api.nvim_create_autocmd('VimEnter', {
    callback = function()
      local buf = vim.api.nvim_get_current_buf()
      vim.wait(10000, function() return #vim.diagnostic.get(buf) > 0 end)
      vim.cmd('normal! gg')
      -- The hovered variable: Bob's `a_reason`, received in the loop.
      for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
        local col = line:find('-> Bob(a, a_reason)', 1, true)
        if col then
          vim.api.nvim_win_set_cursor(0, { i, col + #'-> Bob(a, ' })
          break
        end
      end
      vim.defer_fn(function() vim.lsp.buf.hover() end, 300)
    end,
  })
end

# Shared by the Embed*.cmake scripts: the bytes of FILE as C initializers,
# each byte written as PATTERN with \\1 its two hex digits, and their count.
function(moejit_embed_read file pattern out_bytes out_size)
  file(READ ${file} _hex HEX)
  string(LENGTH "${_hex}" _hex_len)
  math(EXPR _size "${_hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "${pattern}" _bytes "${_hex}")
  set(${out_bytes} "${_bytes}" PARENT_SCOPE)
  set(${out_size} ${_size} PARENT_SCOPE)
endfunction()

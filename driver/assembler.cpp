// SPDX-License-Identifier: Apache-2.0
#include "assembler.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "text.h"

namespace tpu {

AsmError::AsmError(std::string file, int line, int column, std::string message)
    : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                         message),
      file_(std::move(file)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

namespace {

// ---- the operand syntax of each mnemonic (isa.md "Assembly syntax"); bit positions come
// from isa.h so there is one source of truth for the encoding.

enum class Kind {
  Number,  // name=<decimal or 0x hex>
  Flag,    // bare word, sets a 1-bit field
  Dest,    // dest=ub|param|lut or a number 0..3
  Func,    // func=identity|relu|clamp|lut
  BMode,   // bmode=a|dst|fixed|imm or a number 0..3
  Imm,     // imm=<32-bit pattern, signed decimal, or an exact decimal float>: B = immediate
  Reduce,  // reduce=none|fadd|iadd or a number 0..3 (ici_recv)
};

struct Operand {
  std::string_view name;
  BitField bits;
  uint64_t default_value;
  Kind kind;
};

struct Syntax {
  std::string_view mnemonic;
  Opcode op;
  std::vector<Operand> operands;
  int vec_func = -1;  // vector: the func this mnemonic sets (-1: none, `vector func=`)
};

std::vector<Operand> vmem_dma_operands() {
  using namespace field;
  return {{"vmem", kVdmaVmemAddr, 0, Kind::Number},
          {"rows", kVdmaRows, 1, Kind::Number},
          {"host", kVdmaHostAddr, 0, Kind::Number},
          {"host_stride", kVdmaHostStride, 0, Kind::Number},
          {"bf16", kVdmaBf16, 0, Kind::Flag}};
}

std::vector<Operand> vector_operands(bool with_func) {
  using namespace field;
  std::vector<Operand> v = {{"dst", kVecDst, 0, Kind::Number},
                            {"a", kVecA, 0, Kind::Number},
                            {"b", kVecB, 0, Kind::Number},
                            {"imm", kVecB, 0, Kind::Imm},
                            {"bmode", kVecBMode, 0, Kind::BMode},
                            {"inner", kVecInner, 1, Kind::Number},
                            {"outer", kVecOuter, 1, Kind::Number},
                            {"a_inner_stride", kVecAInnerStride, 1, Kind::Number},
                            {"a_outer_stride", kVecAOuterStride, 0, Kind::Number},
                            {"dst_inner_stride", kVecDstInnerStride, 1, Kind::Number},
                            {"dst_outer_stride", kVecDstOuterStride, 0, Kind::Number}};
  if (with_func) v.push_back({"func", kVecFunc, 0, Kind::Number});
  return v;
}

std::vector<Syntax> training_syntax() {
  using namespace field;
  std::vector<Syntax> t = {
      {"read_vmem", Opcode::ReadVmem, vmem_dma_operands()},
      {"write_vmem", Opcode::WriteVmem, vmem_dma_operands()},
      {"load_weights",
       Opcode::LoadWeights,
       {{"vmem", kLwVmemAddr, 0, Kind::Number},
        {"tiles", kLwTiles, 1, Kind::Number},
        {"rows", kLwRows, 0, Kind::Number},
        {"row_stride", kLwRowStride, 1, Kind::Number},
        {"tile_stride", kLwTileStride, 0, Kind::Number},
        {"transpose", kLwTranspose, 0, Kind::Flag}}},
      {"matmul_bf16",
       Opcode::MatmulBf16,
       {{"vmem", kMmbVmemAddr, 0, Kind::Number},
        {"acc", kMmbAccAddr, 0, Kind::Number},
        {"inner", kMmbInner, 1, Kind::Number},
        {"outer", kMmbOuter, 1, Kind::Number},
        {"inner_stride", kMmbInnerStride, 1, Kind::Number},
        {"outer_stride", kMmbOuterStride, 0, Kind::Number},
        {"acc", kMmbAcc, 0, Kind::Flag},
        {"switch", kMmbSwitch, 0, Kind::Flag}}},
      {"acc_to_vmem",
       Opcode::AccToVmem,
       {{"acc", kAtvAccAddr, 0, Kind::Number},
        {"vmem", kAtvVmemAddr, 0, Kind::Number},
        {"rows", kAtvRows, 1, Kind::Number}}},
      {"transpose",
       Opcode::Transpose,
       {{"src", kTrSrc, 0, Kind::Number},
        {"dst", kTrDst, 0, Kind::Number},
        {"blocks", kTrBlocks, 1, Kind::Number},
        {"src_stride", kTrSrcStride, 0, Kind::Number},
        {"dst_stride", kTrDstStride, 0, Kind::Number},
        {"src_row_stride", kTrSrcRowStride, 1, Kind::Number}}},
      {"vector", Opcode::Vector, vector_operands(true)},
      {"ici_send",
       Opcode::IciSend,
       {{"link", kIciLink, 0, Kind::Number},
        {"vmem", kIciVmemAddr, 0, Kind::Number},
        {"rows", kIciRows, 1, Kind::Number}}},
      {"ici_recv",
       Opcode::IciRecv,
       {{"link", kIciLink, 0, Kind::Number},
        {"vmem", kIciVmemAddr, 0, Kind::Number},
        {"rows", kIciRows, 1, Kind::Number},
        {"reduce", kIciReduce, 0, Kind::Reduce}}},
      {"dwconv",
       Opcode::DwConv,
       {{"ub", kDwUbAddr, 0, Kind::Number},
        {"acc", kDwAccAddr, 0, Kind::Number},
        {"width", kDwWidth, 1, Kind::Number},
        {"height", kDwHeight, 1, Kind::Number},
        {"w", kDwWAddr, 0, Kind::Number},
        {"kh", kDwKernelH, 1, Kind::Number},
        {"kw", kDwKernelW, 1, Kind::Number},
        {"ub_stride", kDwUbStride, 0, Kind::Number},
        {"pad_top", kDwPadTop, 0, Kind::Number},
        {"pad_left", kDwPadLeft, 0, Kind::Number},
        {"pad_bottom", kDwPadBottom, 0, Kind::Number},
        {"pad_right", kDwPadRight, 0, Kind::Number},
        {"acc", kDwAcc, 0, Kind::Flag},
        {"a_unsigned", kDwAUnsigned, 0, Kind::Flag},
        {"w_unsigned", kDwWUnsigned, 0, Kind::Flag},
        {"stride2", kDwStride2, 0, Kind::Flag}}},
  };
  for (VecFunc f : all_vec_funcs()) {
    const auto code = static_cast<uint8_t>(f);
    t.push_back({vec_func_name(code), Opcode::Vector, vector_operands(false), code});
  }
  return t;
}

const std::vector<Syntax>& syntax_table() {
  using namespace field;
  static const std::vector<Syntax> kTable = {
      {"nop", Opcode::Nop, {}},
      {"read_host",
       Opcode::ReadHost,
       {{"dest", kHostDest, 0, Kind::Dest},
        {"addr", kHostLocalAddr, 0, Kind::Number},
        {"ub", kHostLocalAddr, 0, Kind::Number},  // same field as addr
        {"rows", kHostRows, 1, Kind::Number},
        {"host", kHostAddr, 0, Kind::Number}}},
      {"read_weights",
       Opcode::ReadWeights,
       {{"tiles", kWeightsTiles, 1, Kind::Number}, {"host", kWeightsHostAddr, 0, Kind::Number}}},
      {"matmul",
       Opcode::Matmul,
       {{"ub", kMatmulUbAddr, 0, Kind::Number},
        {"acc", kMatmulAccAddr, 0, Kind::Number},
        {"inner", kMatmulInner, 1, Kind::Number},
        {"outer", kMatmulOuter, 1, Kind::Number},
        {"inner_stride", kMatmulInnerStride, 1, Kind::Number},
        {"outer_stride", kMatmulOuterStride, 0, Kind::Number},
        {"acc", kMatmulAcc, 0, Kind::Flag},
        {"a_unsigned", kMatmulAUnsigned, 0, Kind::Flag},
        {"w_unsigned", kMatmulWUnsigned, 0, Kind::Flag},
        {"switch", kMatmulSwitch, 0, Kind::Flag}}},
      {"activate",
       Opcode::Activate,
       {{"acc", kActAccAddr, 0, Kind::Number},
        {"ub", kActUbAddr, 0, Kind::Number},
        {"width", kActWidth, 0, Kind::Number},
        {"height", kActHeight, 0, Kind::Number},
        {"pool_k", kActPoolK, 1, Kind::Number},
        {"pool_s", kActPoolS, 1, Kind::Number},
        {"ub_stride", kActUbStride, 0, Kind::Number},
        {"slot", kActSlot, 0, Kind::Number},
        {"func", kActFunc, 0, Kind::Func},
        {"out_unsigned", kActOutUnsigned, 0, Kind::Flag},
        {"raw", kActRaw, 0, Kind::Flag},
        {"pad_top", kActPadTop, 0, Kind::Number},
        {"pad_left", kActPadLeft, 0, Kind::Number},
        {"pad_bottom", kActPadBottom, 0, Kind::Number},
        {"pad_right", kActPadRight, 0, Kind::Number}}},
      {"write_host",
       Opcode::WriteHost,
       {{"addr", kHostLocalAddr, 0, Kind::Number},
        {"ub", kHostLocalAddr, 0, Kind::Number},  // same field as addr
        {"rows", kHostRows, 1, Kind::Number},
        {"host", kHostAddr, 0, Kind::Number}}},
      {"sync", Opcode::Sync, {}},
      {"halt", Opcode::Halt, {}},
  };
  static const std::vector<Syntax> kAll = [] {
    std::vector<Syntax> all = kTable;
    const std::vector<Syntax> train = training_syntax();
    all.insert(all.end(), train.begin(), train.end());
    return all;
  }();
  return kAll;
}

constexpr std::string_view kInstDirective = ".inst";

const Syntax* find_syntax(std::string_view mnemonic) {
  for (const Syntax& s : syntax_table()) {
    if (s.mnemonic == mnemonic) return &s;
  }
  return nullptr;
}

std::string expected_operands(const Syntax& s) {
  if (s.operands.empty()) return "no operands";
  std::string out;
  for (const Operand& o : s.operands) {
    if (!out.empty()) out += ", ";
    out += std::string(o.name) + (o.kind == Kind::Flag ? "" : "=");
  }
  return out;
}

std::string expected_mnemonics() {
  std::string out;
  for (const Syntax& s : syntax_table()) out += std::string(s.mnemonic) + ", ";
  return out + std::string(kInstDirective);
}

struct Token {
  std::string_view text;
  int column;  // 1-based
};

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s) {
    if (!is_ident_char(c)) return false;
  }
  return true;
}

using detail::format;
using detail::parse_number;

using detail::echo;

// The bytes assembly text may hold outside comments: printable ASCII and blanks. Returns the
// 0-based index of the first other byte (a NUL anywhere, even in a comment), or npos.
size_t find_bad_byte(std::string_view line) {
  const size_t comment = line.find_first_of("#;");
  for (size_t i = 0; i < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == 0) return i;
    if (i >= comment) continue;
    if (c >= 0x80 || (c < 0x20 && c != '\t' && c != '\v' && c != '\f') || c == 0x7f) return i;
  }
  return std::string_view::npos;
}

class LineAssembler {
 public:
  LineAssembler(std::string_view file, int line) : file_(file), line_(line) {}

  [[noreturn]] void fail(int column, const std::string& message) const {
    throw AsmError(std::string(file_), line_, column, message);
  }

  // Returns nullopt for a line with no instruction (blank, comment, labels only).
  std::optional<Instruction> assemble_line(std::string_view line) {
    if (const size_t bad = find_bad_byte(line); bad != std::string_view::npos) {
      const unsigned char c = static_cast<unsigned char>(line[bad]);
      fail(static_cast<int>(bad) + 1,
           c == 0
               ? std::string("NUL byte (0x00): this is not assembly text (a binary file? expected "
                             "a .s file of text lines)")
               : format("unexpected byte 0x%02x%s (expected printable ASCII outside comments)", c,
                        c >= 0x80 ? " (not ASCII)" : " (a control character)"));
    }
    std::vector<Token> tokens = tokenize(line);
    size_t first = 0;
    while (first < tokens.size() && tokens[first].text.back() == ':') {
      std::string_view label = tokens[first].text.substr(0, tokens[first].text.size() - 1);
      if (!is_identifier(label)) {
        fail(tokens[first].column,
             "invalid label '" + echo(tokens[first].text) +
                 "' (expected letters, digits, '_' or '.', not starting with a digit, then ':')");
      }
      ++first;  // labels are allowed and ignored: the chip has no branches
    }
    if (first == tokens.size()) return std::nullopt;

    const Token& mnem = tokens[first];
    std::vector<Token> operands(tokens.begin() + first + 1, tokens.end());
    if (mnem.text == kInstDirective) return assemble_inst(mnem, operands);
    const Syntax* syntax = find_syntax(mnem.text);
    if (syntax == nullptr) {
      fail(mnem.column, "unknown mnemonic '" + echo(mnem.text) +
                            "' (expected one of: " + expected_mnemonics() + ")");
    }
    return assemble_operands(*syntax, operands);
  }

 private:
  static std::vector<Token> tokenize(std::string_view line) {
    // A comment runs from '#' or ';' to the end of the line.
    size_t comment = line.find_first_of("#;");
    if (comment != std::string_view::npos) line = line.substr(0, comment);
    std::vector<Token> tokens;
    size_t i = 0;
    while (i < line.size()) {
      if (std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
        continue;
      }
      size_t start = i;
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      tokens.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
    }
    return tokens;
  }

  Instruction assemble_inst(const Token& directive, const std::vector<Token>& operands) {
    const std::string usage = "(expected .inst 0x<1 to 32 hex digits>, bit 127 first)";
    if (operands.size() != 1) {
      fail(operands.empty() ? directive.column + static_cast<int>(directive.text.size())
                            : operands[1].column,
           ".inst takes exactly one operand " + usage);
    }
    std::string_view hex = operands[0].text;
    if (hex.size() < 3 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X')) {
      fail(operands[0].column, "'" + echo(hex) + "' is not a hex word " + usage);
    }
    std::string_view digits = hex.substr(2);
    if (digits.size() > 32) {
      fail(operands[0].column,
           "'" + echo(hex) + "' has " + std::to_string(digits.size()) + " hex digits " + usage);
    }
    RawInstruction raw;
    for (size_t i = 0; i < digits.size(); ++i) {
      char c = digits[digits.size() - 1 - i];  // i-th least significant nibble
      if (!std::isxdigit(static_cast<unsigned char>(c))) {
        fail(operands[0].column + 2 + static_cast<int>(digits.size() - 1 - i),
             std::string("'") + c + "' is not a hex digit " + usage);
      }
      unsigned nibble = std::isdigit(static_cast<unsigned char>(c))
                            ? c - '0'
                            : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
      raw.bytes[i / 2] |= static_cast<uint8_t>(nibble << (4 * (i % 2)));
    }
    // A word that decodes is returned as the instruction it is; either way it encodes to
    // exactly these bytes.
    DecodeResult d = decode(raw.bytes);
    return d.ok() ? d.instr : Instruction(raw);
  }

  Instruction assemble_operands(const Syntax& syntax, const std::vector<Token>& operands) {
    InstrBytes word{};
    set_field(word, field::kOpcode, static_cast<uint8_t>(syntax.op));
    for (const Operand& o : syntax.operands) set_field(word, o.bits, o.default_value);
    if (syntax.vec_func >= 0)
      set_field(word, field::kVecFunc, static_cast<uint64_t>(syntax.vec_func));
    const Token* imm_token = nullptr;
    const Token* bmode_token = nullptr;

    std::map<unsigned, Token> seen;  // field (by lo bit) -> where it was set
    for (const Token& tok : operands) {
      size_t eq = tok.text.find('=');
      bool has_value = eq != std::string_view::npos;
      std::string_view name = has_value ? tok.text.substr(0, eq) : tok.text;
      std::string_view value = has_value ? tok.text.substr(eq + 1) : std::string_view();
      int value_column = tok.column + static_cast<int>(eq) + 1;

      const Operand* op = nullptr;
      bool name_known = false;
      for (const Operand& o : syntax.operands) {
        if (o.name != name) continue;
        name_known = true;
        if ((o.kind == Kind::Flag) != has_value) op = &o;
      }
      if (op == nullptr) {
        if (syntax.operands.empty()) {
          fail(tok.column,
               std::string(syntax.mnemonic) + " takes no operands, found '" + echo(tok.text) + "'");
        }
        if (!name_known) {
          fail(tok.column, "unknown operand '" + echo(name) + "' for " +
                               std::string(syntax.mnemonic) +
                               " (expected one of: " + expected_operands(syntax) + ")");
        }
        if (has_value) {
          fail(tok.column, "'" + echo(name) +
                               "' is a flag: write it as a bare word, "
                               "without '=" +
                               echo(value) + "'");
        }
        fail(tok.column,
             "'" + echo(name) + "' needs a value (expected " + echo(name) + "=<value>)");
      }

      auto [it, inserted] = seen.emplace(op->bits.lo, tok);
      if (!inserted) {
        fail(tok.column, "'" + echo(tok.text) + "' sets the same field as '" +
                             echo(it->second.text) + "' at column " +
                             std::to_string(it->second.column) + " (each field at most once)");
      }
      if (has_value && value.empty()) {
        fail(value_column, "'" + echo(name) + "=' has no value");
      }
      set_field(word, op->bits, operand_value(syntax, *op, value, value_column));
      if (op->kind == Kind::Imm) imm_token = &tok;
      if (op->kind == Kind::BMode) bmode_token = &tok;
    }
    if (imm_token != nullptr) {  // imm= is operand B = the immediate: bmode 3
      if (bmode_token != nullptr && get_field(word, field::kVecBMode) != 3) {
        fail(bmode_token->column, "'" + echo(bmode_token->text) + "' contradicts '" +
                                      echo(imm_token->text) + "' (imm= means bmode=imm)");
      }
      set_field(word, field::kVecBMode, 3);
    }

    DecodeResult d = decode(word);
    if (!d.ok()) {  // cannot happen: only defined fields were set
      fail(1, "internal error: assembled word does not decode: " + d.why);
    }
    return d.instr;
  }

  uint64_t operand_value(const Syntax& syntax, const Operand& op, std::string_view value,
                         int column) {
    switch (op.kind) {
      case Kind::Flag:
        return 1;
      case Kind::Func:
        for (uint8_t f = 0; f < 4; ++f) {
          if (value == act_func_name(static_cast<ActFunc>(f))) return f;
        }
        fail(column,
             "func=" + echo(value) + " is not a function (expected identity, relu, clamp or lut)");
      case Kind::Dest:
        if (value == "ub") return 0;
        if (value == "param") return 1;
        if (value == "lut") return 2;
        if (!parse_number(value)) {
          fail(column, "dest=" + echo(value) +
                           " is not a destination (expected ub, param, lut or a number 0..3)");
        }
        break;
      case Kind::BMode:
        for (uint8_t m = 0; m < 4; ++m) {
          if (value == bmode_name(static_cast<BMode>(m))) return m;
        }
        if (!parse_number(value)) {
          fail(column, "bmode=" + echo(value) +
                           " is not an operand-B mode (expected a, dst, fixed, imm or 0..3)");
        }
        break;
      case Kind::Reduce:
        for (uint8_t r = 0; r < 3; ++r) {
          if (value == ici_reduce_name(r)) return r;
        }
        if (!parse_number(value)) {
          fail(column, "reduce=" + echo(value) +
                           " is not a reduction (expected none, fadd, iadd or a number 0..3)");
        }
        break;
      case Kind::Imm:
        return immediate_value(value, column);
      case Kind::Number:
        break;
    }
    std::optional<uint64_t> v = parse_number(value);
    if (!v) {
      fail(column, "'" + echo(value) + "' is not a number for '" + std::string(op.name) +
                       "' (expected decimal or 0x hex, at most 2^64-1)");
    }
    if (*v > op.bits.max()) {
      fail(column, "value " + echo(value) + " for '" + std::string(op.name) + "' of " +
                       std::string(syntax.mnemonic) + " does not fit in " +
                       std::to_string(op.bits.width) + " bits (expected 0.." +
                       std::to_string(op.bits.max()) + ")");
    }
    return *v;
  }

  // imm=: a 32-bit pattern (0x..), a decimal integer (negative: two's complement int32), or a
  // decimal float with '.', an exponent, inf or nan, which must be exact in fp32.
  uint64_t immediate_value(std::string_view value, int column) {
    const std::string text(value);
    const bool neg = !text.empty() && text[0] == '-';
    const std::string body = neg ? text.substr(1) : text;
    const bool is_float = body.find_first_of(".eEin") != std::string::npos &&
                          body.rfind("0x", 0) != 0 && body.rfind("0X", 0) != 0;
    if (is_float) {
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      const auto f = static_cast<float>(d);
      if (end != text.c_str() + text.size() || (static_cast<double>(f) != d && d == d)) {
        fail(column,
             "imm=" + echo(value) +
                 " is not a float that fp32 holds exactly (write its bit pattern as 0x...)");
      }
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return d == d ? bits : 0x7FC00000u;
    }
    std::optional<uint64_t> v = parse_number(body);
    const uint64_t limit = neg ? (uint64_t{1} << 31) : 0xFFFFFFFFu;
    if (!v || *v > limit) {
      fail(column, "imm=" + echo(value) +
                       " is not a 32-bit immediate (expected 0x..., a decimal int32 or uint32, or "
                       "an exact decimal float)");
    }
    return neg ? static_cast<uint32_t>(-static_cast<int64_t>(*v)) : *v;
  }

  std::string_view file_;
  int line_;
};

void check_binary_size(size_t size, std::string_view filename) {
  if (size % kInstrBytes != 0) {
    throw BinaryError(std::string(filename) + ": size " + std::to_string(size) +
                      " bytes is not a multiple of 16 (each instruction is 16 bytes; " +
                      std::to_string(size % kInstrBytes) + " trailing bytes after " +
                      std::to_string(size / kInstrBytes) + " instructions)");
  }
}

}  // namespace

std::vector<Instruction> assemble(std::string_view text, std::string_view filename) {
  std::vector<Instruction> program;
  int line_number = 0;
  size_t pos = 0;
  // A UTF-8 byte-order mark (some editors write one) is not part of the first line.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;
  while (pos < text.size()) {
    ++line_number;
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineAssembler la(filename, line_number);
    if (std::optional<Instruction> instr = la.assemble_line(line)) program.push_back(*instr);
  }
  return program;
}

std::vector<uint8_t> encode_program(const std::vector<Instruction>& program) {
  std::vector<uint8_t> bytes;
  bytes.reserve(program.size() * kInstrBytes);
  for (const Instruction& instr : program) {
    InstrBytes w = encode(instr);
    bytes.insert(bytes.end(), w.begin(), w.end());
  }
  return bytes;
}

std::vector<Instruction> decode_program(const std::vector<uint8_t>& bytes,
                                        std::string_view filename) {
  check_binary_size(bytes.size(), filename);
  std::vector<Instruction> program;
  program.reserve(bytes.size() / kInstrBytes);
  for (size_t i = 0; i < bytes.size(); i += kInstrBytes) {
    program.push_back(decode(&bytes[i]).instr);  // RawInstruction when it does not decode
  }
  return program;
}

std::string disassemble_program(const std::vector<uint8_t>& bytes, std::string_view filename) {
  check_binary_size(bytes.size(), filename);
  std::string text;
  for (size_t i = 0; i < bytes.size(); i += kInstrBytes) {
    DecodeResult d = decode(&bytes[i]);
    text += disassemble(d.instr);
    if (!d.ok()) text += "  # " + std::string(error_name(d.error)) + ": " + d.why;
    text += '\n';
  }
  return text;
}

std::vector<uint8_t> load_binary(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) {
    throw BinaryError(path + ": is a directory (expected a binary program file)");
  }
  // The size first: a huge file is refused before it is read (pipes are counted while read).
  auto too_big = [&](uint64_t size, bool exact) {
    return BinaryError(path + ": " + std::to_string(size) + (exact ? " bytes" : " bytes or more") +
                       " is larger than any program (at most " + std::to_string(kMaxProgramBytes) +
                       " bytes = " + std::to_string(kMaxProgramBytes / kInstrBytes) +
                       " instructions, the command area)");
  };
  if (std::filesystem::is_regular_file(st)) {
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxProgramBytes) throw too_big(size, true);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BinaryError(path + ": cannot open for reading");
  std::vector<uint8_t> bytes;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.insert(bytes.end(), buf, buf + in.gcount());
    if (bytes.size() > kMaxProgramBytes) throw too_big(bytes.size(), false);
  }
  if (in.bad()) throw BinaryError(path + ": read error");
  check_binary_size(bytes.size(), path);
  return bytes;
}

}  // namespace tpu

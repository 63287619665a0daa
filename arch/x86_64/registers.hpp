// The amd64 GNU/Linux register list in gdb's numbering, and where each register lives in a
// RegisterSnapshot (user_regs_struct or the FXSAVE/XSAVE area).
#pragma once
#include "arch/arch.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <span>
#include <vector>

namespace tpagent::arch::x86_64 {

// Where a register's bytes come from.
enum class RegisterSource : std::uint8_t {
    Gpr,    // bytes of user_regs_struct at `offset` (low `width` bytes of a 64-bit field)
    Fxsave, // bytes of the legacy area at `offset`, zero-extended to the gdb size
    X87Tag, // full 16-bit tag word, rebuilt from the abridged FXSAVE tag
    Fop,    // 11-bit opcode at fxsave::kFop
    Xstate, // bytes of an XSAVE component at `offset` (zero when XSTATE_BV says init)
};

struct RegisterPlace {
    RegisterSource source;
    std::uint32_t offset; // byte offset in the gpr block or the xstate area
    std::uint32_t width;  // bytes present in the source (<= the gdb size)
    XComponent component; // for Fxsave/X87Tag/Fop/Xstate: the XSAVE component
};

// How target.xml describes a register.
struct RegisterType {
    const char* type;
    const char* group; // nullptr: gdb's default group
};

// One gdb feature (org.gnu.gdb.i386.*): registers [first, first + count).
struct RegisterFeature {
    const char* name;
    int first;
    int count;
};

// The registers gdb sees for a given CPU feature set, in regnum order.
class RegisterLayout {
  public:
    explicit RegisterLayout(const CpuFeatures& features);
    // RegisterDesc::name points into names_.
    RegisterLayout(const RegisterLayout&) = delete;
    RegisterLayout& operator=(const RegisterLayout&) = delete;

    std::span<const RegisterDesc> registers() const { return descs_; }
    std::span<const RegisterPlace> places() const { return places_; }
    std::span<const RegisterType> types() const { return types_; }
    std::span<const RegisterFeature> features() const { return features_; }
    const CpuFeatures& cpu() const { return cpu_; }
    std::size_t g_size() const { return g_size_; }
    // regnum of `name`, or -1.
    int find(std::string_view name) const;

    void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                       std::vector<bool>& available) const;
    void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const;

  private:
    void add_feature(const char* name);
    void add(const char* name, std::uint32_t size, RegisterPlace place, const char* type,
             const char* group = nullptr);
    const char* numbered(std::string_view prefix, int i, std::string_view suffix = "");

    CpuFeatures cpu_;
    std::deque<std::string> names_; // stable addresses for generated names
    std::vector<RegisterDesc> descs_;
    std::vector<RegisterPlace> places_;
    std::vector<RegisterType> types_;
    std::vector<RegisterFeature> features_;
    std::size_t g_size_ = 0;
};

// gdb regnums fixed by the core feature.
inline constexpr int kRbpRegnum = 6;
inline constexpr int kRspRegnum = 7;
inline constexpr int kRipRegnum = 16;

} // namespace tpagent::arch::x86_64

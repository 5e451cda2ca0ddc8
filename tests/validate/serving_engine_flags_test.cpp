// The engine flags a serving case quotes in its notes: each spelling of a limit maps to one
// scenario key, booleans read their negations, per-rank limits are marked, prose is not a flag.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "validate/serving_cases.hpp"
#include "validate/serving_engine_flags.hpp"

using namespace stacksim::analysis;

namespace {

const EngineFlag* find(const std::vector<EngineFlag>& flags, const std::string& key) {
  for (const auto& f : flags)
    if (f.key == key) return &f;
  return nullptr;
}

}  // namespace

TEST(ServingEngineFlags, EachEngineSpellingMapsToOneKey) {
  const auto v =
      engine_flags_in("Flags: -tp 8 --max-num-seqs 1024 --max-num-batched-tokens=2048 --gpu-memory-utilization 0.95");
  ASSERT_NE(find(v, "max_num_seqs"), nullptr);
  EXPECT_EQ(find(v, "max_num_seqs")->value, 1024);
  EXPECT_EQ(find(v, "max_num_batched_tokens")->value, 2048);
  EXPECT_DOUBLE_EQ(find(v, "gpu_memory_utilization")->value, 0.95);
  const auto t =
      engine_flags_in("--max_batch_size 384 per rank, --max_num_tokens 1536, kv_cache_free_gpu_mem_fraction 0.93.");
  EXPECT_EQ(find(t, "max_num_seqs")->value, 384);
  EXPECT_TRUE(find(t, "max_num_seqs")->per_rank);
  EXPECT_EQ(find(t, "max_num_batched_tokens")->value, 1536);
  EXPECT_DOUBLE_EQ(find(t, "kv_free_memory_fraction")->value, 0.93);
  const auto s = engine_flags_in("--max-running-requests 512 --chunked-prefill-size -1 --mem-fraction-static 0.8");
  EXPECT_EQ(find(s, "max_num_seqs")->value, 512);
  EXPECT_FALSE(find(s, "max_num_seqs")->per_rank);
  EXPECT_EQ(find(s, "max_num_batched_tokens")->value, -1);
}

TEST(ServingEngineFlags, BooleansAndProse) {
  EXPECT_EQ(find(engine_flags_in("--enable-chunked-prefill=False --num-scheduler-steps 15"), "chunked_prefill")->value,
            0);
  EXPECT_EQ(find(engine_flags_in("--enable-chunked-prefill"), "chunked_prefill")->value, 1);
  EXPECT_EQ(find(engine_flags_in("--no-enable-chunked-prefill"), "chunked_prefill")->value, 0);
  // A flag named without a value ("batch_size = --max_batch_size (per rank)") is not a setting.
  EXPECT_EQ(find(engine_flags_in("batch_size = --max_batch_size (per rank); max_concurrency = --concurrency"),
                 "max_num_seqs"),
            nullptr);
  EXPECT_TRUE(engine_flags_in("the batch size was chosen by the engine").empty());
}

TEST(ServingEngineFlags, AttentionDataParallelIsRecognisedInEachSpelling) {
  EXPECT_TRUE(states_attention_dp("enable_attention_dp true (attention data-parallel)"));
  EXPECT_TRUE(states_attention_dp("--enable-dp-attention --dp 8"));
  EXPECT_TRUE(states_attention_dp("Attention DP, --tp 8 --ep 8"));
  EXPECT_FALSE(states_attention_dp("enable_attention_dp false"));
  EXPECT_FALSE(states_attention_dp("tensor-parallel attention, --tp 8"));
}

TEST(ServingEngineFlags, TheEngineTheNotesName) {
  // "Engine:" wins over other engines the text mentions; otherwise only a sole mention counts.
  EXPECT_EQ(engine_named_in("vLLM v0.6.2 (commit c) ... Flags: Engine: TGI (version not stated), --num-shard 8"),
            "tgi");
  EXPECT_EQ(engine_named_in("Engine: Hugging Face Text Generation Inference, --max-concurrent-requests 1024"), "tgi");
  EXPECT_EQ(engine_named_in("served with SGLang 0.4.1 on 8 GPUs"), "sglang");
  EXPECT_EQ(engine_named_in("NIM backend (TensorRT-LLM or vLLM profile) not stated"), "");
  EXPECT_EQ(engine_named_in("an in-house engine"), "");
}

/* Multi-agent RL episodes through the C API: an environment made of C
 * callbacks, agents made of pipe runners (fake bitstream echo models in forked
 * processes), the step budget, callback errors, and a model killed
 * mid-episode. */
#include "c_test.h"

#include <stdlib.h>

/* An agent: a private channel, an echo model, a runner with x int64[1] ->
   decision int64[1]. */
typedef struct {
  char* dir;
  char* base;
  pid_t model;
  mlb_runner* runner;
} test_agent;

static int agent_open(test_agent* a) {
  int64_t one = 1;
  mlb_spec* x = mlbt_spec("x", MLB_DTYPE_INT64, &one, 1);
  mlb_spec* d = mlbt_spec("decision", MLB_DTYPE_INT64, &one, 1);
  const mlb_spec* features[1];
  const mlb_spec* advice[1];
  mlb_pipe_options* o = NULL;
  mlb_error* err = NULL;
  int ok = 0;
  memset(a, 0, sizeof *a);
  features[0] = x;
  advice[0] = d;
  if (x && d && mlbt_channel_new(&a->dir, &a->base) && mlbt_make_fifos(a->base)) {
    a->model = mlbt_fake_model_start(a->base, MLBT_ECHO, 8, 8);
    if (a->model > 0 && mlb_pipe_options_create(&o, &err) == MLB_OK &&
        mlb_pipe_options_set_base(o, a->base, &err) == MLB_OK &&
        mlb_pipe_options_set_timeout_ms(o, 5000, &err) == MLB_OK &&
        mlb_pipe_runner_create(features, 1, advice, 1, o, &a->runner, &err) == MLB_OK)
      ok = 1;
  }
  if (!ok) fprintf(stderr, "agent_open: %s\n", mlb_error_message(err));
  mlb_error_free(err);
  mlb_pipe_options_destroy(o);
  mlb_spec_destroy(x);
  mlb_spec_destroy(d);
  return ok;
}

static void agent_close(test_agent* a) {
  mlb_runner_destroy(a->runner);
  mlbt_kill(a->model);
  mlbt_channel_free(a->dir, a->base);
}

/* The environment: `length` decisions; agent (step % agents) acts; each
   observation is 100 * step + agent, and the echo must come back. */
typedef struct {
  int64_t step;
  int64_t length;
  int32_t agents;
  int resets;
  int64_t fail_at;     /* observe fails at this step (-1: never) */
  int64_t kill_at;     /* kill agent 0's model at this step (-1: never) */
  pid_t* kill_pid;
  int32_t next_override; /* -1, or the index next_agent returns */
  int64_t wrong_echoes;
} episode;

static mlb_status env_reset(void* user, mlb_error** error) {
  episode* e = (episode*)user;
  (void)error;
  e->step = 0;
  ++e->resets;
  return MLB_OK;
}

static int env_done(void* user) {
  episode* e = (episode*)user;
  return e->step >= e->length;
}

static mlb_status env_next(void* user, int32_t* agent, mlb_error** error) {
  episode* e = (episode*)user;
  (void)error;
  *agent = e->next_override >= 0 ? e->next_override : (int32_t)(e->step % e->agents);
  return MLB_OK;
}

static mlb_status env_observe(void* user, int32_t agent, mlb_runner* runner, mlb_error** error) {
  episode* e = (episode*)user;
  void* p = NULL;
  mlb_status s;
  if (e->step == e->fail_at) {
    *error = mlb_error_new(MLB_INVALID_ARGUMENT, "the observation could not be built");
    return MLB_INVALID_ARGUMENT;
  }
  if (e->step == e->kill_at) {
    mlbt_kill(*e->kill_pid);
    *e->kill_pid = 0;
  }
  /* LLVM style: write the input in place. */
  s = mlb_runner_input_data(runner, 0, MLB_DTYPE_INT64, &p, NULL);
  if (s != MLB_OK) {
    *error = mlb_error_new(s, mlb_runner_last_error(runner));
    return s;
  }
  *(int64_t*)p = 100 * e->step + agent;
  return MLB_OK;
}

static mlb_status env_step(void* user, int32_t agent, mlb_runner* runner, mlb_error** error) {
  episode* e = (episode*)user;
  int64_t decision = -1;
  mlb_status s = mlb_runner_get_output(runner, 0, MLB_DTYPE_INT64, &decision, 1);
  (void)error;
  if (s != MLB_OK) return s; /* no message: the library names the callback */
  if (decision != 100 * e->step + agent) ++e->wrong_echoes;
  ++e->step;
  return MLB_OK;
}

static mlb_rl_environment make_env(episode* e) {
  mlb_rl_environment env;
  memset(&env, 0, sizeof env);
  env.struct_size = sizeof env;
  env.user = e;
  env.reset = env_reset;
  env.done = env_done;
  env.next_agent = env_next;
  env.observe = env_observe;
  env.step = env_step;
  return env;
}

static void init_episode(episode* e, int32_t agents, int64_t length) {
  memset(e, 0, sizeof *e);
  e->agents = agents;
  e->length = length;
  e->fail_at = -1;
  e->kill_at = -1;
  e->next_override = -1;
}

TEST(two_agents) {
  test_agent a, b;
  episode e;
  mlb_rl_environment env;
  mlb_rl_agents* list = NULL;
  mlb_rl_driver* driver = NULL;
  mlb_rl_options* opts = NULL;
  mlb_error* err = NULL;
  int64_t steps = -1, decisions[3] = {-1, -1, -1}, episodes = 0;
  int32_t failed = 7, index = -1;
  size_t count = 0;
  REQUIRE(agent_open(&a));
  REQUIRE(agent_open(&b));
  init_episode(&e, 2, 7);
  env = make_env(&e);
  REQUIRE(mlb_rl_agents_create(&list, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_agents_add(list, "select", a.runner, "node", &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_agents_add(list, "colour", b.runner, NULL, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_agents_count(list, &count, &err), err);
  CHECK_INT_EQ(2, count);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_agents_find(list, "colour", &index, &err), err);
  CHECK_INT_EQ(1, index);
  CHECK_ERR_CALL(MLB_NOT_FOUND, mlb_rl_agents_find(list, "split", &index, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "split");
  mlb_error_free(err);
  err = NULL;
  REQUIRE(mlb_rl_options_create(&opts, NULL) == MLB_OK);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_options_set_context(opts, "main", &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_options_set_context_mode(opts, MLB_RL_CONTEXT_PER_DECISION, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_options_set_max_steps(opts, 100, &err), err);
  REQUIRE(mlb_rl_driver_create(&driver, NULL) == MLB_OK);

  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_run_episode(driver, &env, list, opts, &steps, &err), err);
  CHECK_INT_EQ(7, steps);
  CHECK_INT_EQ(0, e.wrong_echoes);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_last_episode(driver, &steps, decisions, 3, &failed, &err), err);
  CHECK_INT_EQ(7, steps);
  CHECK_INT_EQ(4, decisions[0]);
  CHECK_INT_EQ(3, decisions[1]);
  CHECK_INT_EQ(0, decisions[2]); /* past the agent list */
  CHECK_INT_EQ(-1, failed);

  /* Again, with default options (NULL); the driver counts episodes. */
  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_run_episode(driver, &env, list, NULL, NULL, &err), err);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_episodes(driver, &episodes, &err), err);
  CHECK_INT_EQ(2, episodes);
  CHECK_INT_EQ(2, e.resets);
  CHECK_INT_EQ(0, e.wrong_echoes);
  CHECK(err == NULL);

  mlb_rl_driver_destroy(driver);
  mlb_rl_options_destroy(opts);
  mlb_rl_agents_destroy(list);
  agent_close(&a);
  agent_close(&b);
}

TEST(errors_end_the_episode) {
  test_agent a;
  episode e;
  mlb_rl_environment env;
  mlb_rl_agents* list = NULL;
  mlb_rl_driver* driver = NULL;
  mlb_rl_options* opts = NULL;
  mlb_error* err = NULL;
  int64_t steps = -1;
  int32_t failed = 7;
  REQUIRE(agent_open(&a));
  REQUIRE(mlb_rl_agents_create(&list, NULL) == MLB_OK);
  REQUIRE(mlb_rl_agents_add(list, "inliner", a.runner, NULL, NULL) == MLB_OK);
  REQUIRE(mlb_rl_driver_create(&driver, NULL) == MLB_OK);
  REQUIRE(mlb_rl_options_create(&opts, NULL) == MLB_OK);

  /* A callback's error, with its message, the agent and the step. */
  init_episode(&e, 1, 10);
  e.fail_at = 3;
  env = make_env(&e);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "the observation could not be built");
  CHECK_CONTAINS(mlb_error_message(err), "agent 'inliner' (#0) at step 3: observe");
  CHECK_INT_EQ(3, steps);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_last_episode(driver, &steps, NULL, 0, &failed, &err), err);
  CHECK_INT_EQ(0, failed);

  /* The step budget. */
  init_episode(&e, 1, 1000);
  env = make_env(&e);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_options_set_max_steps(opts, 5, &err), err);
  CHECK_ERR_CALL(MLB_RESOURCE_EXHAUSTED, mlb_rl_driver_run_episode(driver, &env, list, opts, &steps, &err), err);
  CHECK_INT_EQ(5, steps);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_options_set_max_steps(opts, 0, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_options_set_context_mode(opts, 9, &err), err);

  /* An agent index out of range. */
  init_episode(&e, 1, 3);
  e.next_override = 4;
  env = make_env(&e);
  CHECK_ERR_CALL(MLB_OUT_OF_RANGE, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "nextAgent returned 4");

  /* A malformed environment. */
  init_episode(&e, 1, 3);
  env = make_env(&e);
  env.observe = NULL;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "required");
  env = make_env(&e);
  env.struct_size = 8;
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "struct_size");
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_driver_run_episode(driver, NULL, list, NULL, &steps, &err), err);
  CHECK_ERR_CALL(MLB_INVALID_ARGUMENT, mlb_rl_agents_add(list, "x", NULL, NULL, &err), err);

  /* The session still works after the environment's errors. */
  init_episode(&e, 1, 2);
  env = make_env(&e);
  CHECK_ERR_CALL(MLB_OK, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_INT_EQ(0, e.wrong_echoes);

  mlb_error_free(err);
  mlb_rl_options_destroy(opts);
  mlb_rl_driver_destroy(driver);
  mlb_rl_agents_destroy(list);
  agent_close(&a);
}

TEST(model_killed_mid_episode) {
  test_agent a;
  episode e;
  mlb_rl_environment env;
  mlb_rl_agents* list = NULL;
  mlb_rl_driver* driver = NULL;
  mlb_error* err = NULL;
  int64_t steps = -1;
  REQUIRE(agent_open(&a));
  REQUIRE(mlb_rl_agents_create(&list, NULL) == MLB_OK);
  REQUIRE(mlb_rl_agents_add(list, "allocator", a.runner, NULL, NULL) == MLB_OK);
  REQUIRE(mlb_rl_driver_create(&driver, NULL) == MLB_OK);
  init_episode(&e, 1, 10);
  e.kill_at = 4;
  e.kill_pid = &a.model;
  env = make_env(&e);
  CHECK_ERR_CALL(MLB_UNAVAILABLE, mlb_rl_driver_run_episode(driver, &env, list, NULL, &steps, &err), err);
  CHECK_CONTAINS(mlb_error_message(err), "agent 'allocator' (#0) at step 4: evaluate");
  CHECK_INT_EQ(4, steps);
  /* The runner reports the failed evaluation too: no stale outputs. */
  {
    int64_t d = 0;
    CHECK_RUNNER(MLB_FAILED_PRECONDITION, a.runner, mlb_runner_get_output(a.runner, 0, MLB_DTYPE_INT64, &d, 1));
  }
  mlb_error_free(err);
  mlb_rl_driver_destroy(driver);
  mlb_rl_agents_destroy(list);
  agent_close(&a);
}

int main(int argc, char** argv) {
  static const mlbt_case cases[] = {
      TEST_CASE(two_agents),
      TEST_CASE(errors_end_the_episode),
      TEST_CASE(model_killed_mid_episode),
  };
  return RUN_TESTS(argc, argv, cases);
}

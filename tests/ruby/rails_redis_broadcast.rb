# Broadcasts into Hearth with Rails' own Action Cable redis adapter, as an app with
# `config/cable.yml` `adapter: redis` would, then disconnects a user the way a Rails console
# does. Prints ActiveSupport's JSON encoding of the broadcast HTML (what the adapter publishes).
#
#   ruby tests/ruby/rails_redis_broadcast.rb REDIS_URL CHANNEL_PREFIX STREAM USER_ID
require "action_cable"
require "base64"
require "logger"
require "active_support/hash_with_indifferent_access"
require "active_support/json"

url, prefix, stream, user_id = ARGV
html = %(<turbo-stream action="append" target="messages"><template><p id="message_1">Hi & "bye" \u2028 é</p></template></turbo-stream>)

ActionCable.server.config.logger = Logger.new(nil)
ActionCable.server.config.cable = ActiveSupport::HashWithIndifferentAccess.new(
  adapter: "redis", url: url, channel_prefix: prefix
)

# Campfire's connection is `identified_by :current_user`; its identifier is the user's
# GlobalID param.
class CampfireUser
  def initialize(id) = @id = id
  def to_gid_param = Base64.urlsafe_encode64("gid://campfire/User/#{@id}", padding: false)
end

module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :current_user
  end
end
ActionCable.server.config.connection_class = -> { ApplicationCable::Connection }

puts ActiveSupport::JSON.encode(html)
$stdout.flush
# Turbo's `broadcast_append_to` ends in this call with the rendered HTML string.
ActionCable.server.broadcast(stream, html)
ActionCable.server.remote_connections.where(current_user: CampfireUser.new(Integer(user_id))).disconnect
